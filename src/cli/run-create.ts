import type { Command } from 'commander';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { refuseIntegrityKey, requireEnv, UsageError } from './env.js';
import { computeEvidenceBundle } from './evidence-tools.js';
import { bridgeRequest, describeFailure } from './http.js';
import { localArtifactMap, realArtifactRoot } from './local-paths.js';
import { terminalJson } from './terminal.js';

/**
 * `harness run create <id> --artifact-root D [--adapter-path P] [--print-evidence-bundle]`:
 * creates (or idempotently re-syncs) a run. With --print-evidence-bundle it also prints the
 * pre-review evidence bundle and its digest computed from the artifact root, exactly as
 * `harness review sign` and the finish-line gate compute it.
 */
export function registerRunCreate(program: Command): void {
  const run = program.command('run').description('run-creation tool');
  run
    .command('create')
    .description('create or sync a run on the bridge (token from HARNESS_BRIDGE_ACCESS_TOKEN)')
    .argument('<id>', 'canonical run ID')
    .requiredOption('--artifact-root <dir>', 'absolute artifact root, sealed at creation')
    .option(
      '--adapter-path <path>',
      'project adapter (inside the artifact root, repo root or an adapter root)',
    )
    .option('--title <title>')
    .option('--print-evidence-bundle', 'print the pre-review evidence bundle and digest')
    .action(
      async (
        id: string,
        opts: { artifactRoot: string; adapterPath?: string; title?: string; printEvidenceBundle?: boolean },
      ) => {
        refuseIntegrityKey('harness run create');
        if (!RUN_ID_PATTERN.test(id)) throw new UsageError(`run ID ${JSON.stringify(id)} is not canonical`);
        const token = requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN');
        const root = await realArtifactRoot(opts.artifactRoot);
        const out: Record<string, unknown> = { runId: id };
        if (opts.printEvidenceBundle) {
          const map = await localArtifactMap(root, opts.adapterPath);
          const { bundle, digest } = await computeEvidenceBundle(root, id, map);
          out['evidenceBundle'] = bundle;
          out['evidenceBundleDigest'] = digest;
        }
        const body = {
          id,
          artifactRoot: root,
          ...(opts.adapterPath === undefined ? {} : { adapterPath: opts.adapterPath }),
          ...(opts.title === undefined ? {} : { title: opts.title }),
        };
        const r = await bridgeRequest('/runs', {
          method: 'POST',
          body,
          headers: { 'x-harness-bridge-token': token },
        });
        if (r.body['ok'] !== true) {
          process.stderr.write(`${describeFailure(r)}\n`);
          if (opts.printEvidenceBundle) process.stdout.write(`${terminalJson({ ...out, ok: false }, 2)}\n`);
          process.exitCode = 1;
          return;
        }
        process.stdout.write(
          `${terminalJson({ ok: true, created: r.body['created'] === true, ...out }, 2)}\n`,
        );
      },
    );
}
