import { readFileSync } from 'node:fs';

/**
 * The package version (package.json), which `harness --version` prints. It versions the CLI and
 * the HTTP API by semver; the contract's own versions (`contractVersion` v0.5, `bridgeVersion`
 * 0.8 in src/contract/version.ts) are fixed by the specification and do not follow it. Read from
 * the file at run time so there is one place to change: this module runs as
 * dist/src/cli/version.js, three levels below the package root.
 */
export function packageVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'));
  const version = (pkg as { version?: unknown }).version;
  if (typeof version !== 'string') throw new Error('package.json has no version');
  return version;
}
