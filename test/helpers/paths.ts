import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The repository root, found from this file whether the tests run as TypeScript (test/helpers) or
 * as the JavaScript `npm test` compiles (dist/test/helpers): the nearest directory above whose
 * package.json is this project's.
 */
function findRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && JSON.parse(readFileSync(pkg, 'utf8')).name === 'harness-bridge') return dir;
  }
  throw new Error(`no harness-bridge package.json above ${from}`);
}

export const ROOT = findRoot(import.meta.dirname);
/** The built CLI entry (`harness`); tests that spawn it need `npm run build`. */
export const CLI = join(ROOT, 'dist', 'src', 'cli', 'main.cjs');
