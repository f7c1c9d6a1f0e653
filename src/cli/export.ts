import type { KeyObject } from 'node:crypto';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { readPublicKey } from '../sources/bundle.js';
import { SourceError } from '../sources/client.js';
import { atomicWrite } from '../storage/atomic.js';
import { bundleText } from '../storage/bundle-seal.js';
import { refuseIntegrityKey, requireEnv, UsageError } from './env.js';
import { bridgeRequest, describeFailure } from './http.js';
import { defaultDevDir, EXPORT_PUBLIC_KEY_FILE } from './init.js';
import { terminalJson } from './terminal.js';

/**
 * Where `harness verify --bundle` and `harness replay` of a bundle take the export key's public
 * half from: `--key FILE`, else HARNESS_EXPORT_PUBLIC_KEY, else the export-key.pub `harness init`
 * writes beside the runs (~/.harness/dev/export-key.pub). A key that cannot be read is a usage error.
 */
export function exportPublicKey(option: string | undefined, env: NodeJS.ProcessEnv = process.env) {
  const file = option ?? (env['HARNESS_EXPORT_PUBLIC_KEY'] || join(defaultDevDir(), EXPORT_PUBLIC_KEY_FILE));
  return async (): Promise<KeyObject> => {
    try {
      return await readPublicKey(resolve(file));
    } catch (err) {
      if (err instanceof SourceError)
        throw new UsageError(`${err.message} (give the public key with --key FILE)`);
      throw err;
    }
  };
}

/**
 * `harness export <runId> [-o FILE] [--with-artifacts]`: the bridge's signed bundle of a run. The
 * bundle is written whole or not at all: to standard output, or to FILE through a temporary file
 * renamed over it (mode 0600: it may hold the artifacts' bytes).
 */
export function registerExport(program: Command): void {
  program
    .command('export')
    .description('write a signed, self-contained bundle of a run (check it with harness verify --bundle)')
    .argument('<runId>', 'the run to export')
    .option('-o, --output <file>', 'write the bundle here (default: standard output)')
    .option('--with-artifacts', "include the claimed artifacts' bytes (each checked against its claim)")
    .action(async (runId: string, opts: { output?: string; withArtifacts?: boolean }) => {
      if (!RUN_ID_PATTERN.test(runId))
        throw new UsageError(`run ID ${JSON.stringify(runId)} is not canonical`);
      refuseIntegrityKey('harness export');
      const token = requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN');
      const query = opts.withArtifacts ? '?withArtifacts=1' : '';
      const r = await bridgeRequest(`/runs/${encodeURIComponent(runId)}/export${query}`, {
        headers: { 'x-harness-bridge-token': token },
      });
      // The router's 404: a bridge that holds no export key serves no export route.
      if (r.status === 404 && r.body['error'] === 'not_found')
        throw new Error(
          'the bridge holds no export key (HARNESS_BRIDGE_EXPORT_KEY; harness init adds one to dev.env), or is older than harness export: set it and restart the bridge',
        );
      if (r.status !== 200) throw new Error(describeFailure(r));
      // The bridge sends the canonical JSON it signed; the same form is written, byte for byte.
      const text = bundleText(r.body);
      if (opts.output === undefined) {
        process.stdout.write(text);
        return;
      }
      await atomicWrite(resolve(opts.output), text, 0o600);
      const m = r.body['manifest'] as { status: string; eventCount: number };
      const artifacts = (r.body['artifacts'] as unknown[]).length;
      process.stdout.write(
        `${terminalJson({ runId, file: resolve(opts.output), status: m.status, events: m.eventCount, artifacts })}\n`,
      );
    });
}
