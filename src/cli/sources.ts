import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { blueprint, checkAdapterFile } from '../sources/blueprint.js';
import { readRunInput } from '../sources/database.js';
import { replay } from '../sources/replay.js';
import { carriesArtifacts } from '../sources/replay-artifacts.js';
import { readReplayInput } from '../sources/replay-input.js';
import { startWatch } from '../sources/watch.js';
import { requireEnv, UsageError } from './env.js';
import { exportPublicKey } from './export.js';
import { realArtifactRoot, replaysDir } from './local-paths.js';
import { Progress } from './progress.js';
import { bridgeCall, reporting } from './source-call.js';
import { terminalJson, terminalText } from './terminal.js';

function speedOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const speed = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || !(speed > 0) || !Number.isFinite(speed))
    throw new UsageError('--speed must be a number above 0');
  return speed;
}

export function registerReplay(program: Command): void {
  program
    .command('replay')
    .description(
      'post a recorded run (an exported bundle, a JSONL file of contract events, or a run the bridge holds) as a new replay run',
    )
    .argument(
      '[file]',
      'a bundle (harness export), verified first; or one RunEvent a line, every line checked first',
    )
    .option(
      '--run <runId>',
      'instead of FILE: a run the bridge holds, read through its API (source database)',
    )
    .option('--as <runId>', 'the new run; default <file name or run ID>-replay-<n>, the first n not taken')
    .option('--speed <n>', 'replay the recorded gaps (by ts) divided by n; default: no waiting')
    .option('--key <file>', "a bundle's export key (public half); default ~/.harness/dev/export-key.pub")
    .option(
      '--artifact-root <dir>',
      "the replay run's artifact root; for a bundle with artifacts, a new or empty directory to write them in",
    )
    .option('--adapter <file>', "the replay run's adapter (the recorded run's artifact paths come from it)")
    .action(async (file: string | undefined, opts: ReplayFlags) => {
      await reporting(async () => {
        if ((file === undefined) === (opts.run === undefined))
          throw new UsageError('give exactly one of FILE and --run RUN_ID');
        if (opts.run !== undefined && opts.key !== undefined)
          throw new UsageError(
            '--key names the export key of a bundle FILE; --run reads the run through the bridge',
          );
        const speed = speedOf(opts.speed);
        const adapterPath = opts.adapter === undefined ? undefined : await checkAdapterFile(opts.adapter);
        const call = bridgeCall('harness replay');
        const input =
          file === undefined
            ? await readRunInput(call, opts.run!)
            : await readReplayInput(file, exportPublicKey(opts.key));
        // A bundle's bytes go into a directory made for them; any other root must exist already.
        const artifactRoot =
          opts.artifactRoot === undefined
            ? undefined
            : carriesArtifacts(input)
              ? resolve(opts.artifactRoot)
              : await realArtifactRoot(opts.artifactRoot);
        const progress = new Progress();
        progress.phase(input.events.length, 'events');
        const made = await replay(call, input, {
          ...(opts.as === undefined ? {} : { as: opts.as }),
          ...(speed === undefined ? {} : { speed }),
          ...(artifactRoot === undefined ? {} : { artifactRoot }),
          ...(adapterPath === undefined ? {} : { adapterPath }),
          replayRoot: (runId) => join(replaysDir(), runId),
          humanHeaders: () => ({ 'x-harness-human-token': requireEnv('HARNESS_HUMAN_APPROVAL_TOKEN') }),
          progress: (done) => progress.update(done),
        }).finally(() => progress.clear());
        const root = made.artifactRoot === null ? {} : { artifactRoot: made.artifactRoot };
        process.stdout.write(
          `${terminalJson({ runId: made.runId, events: input.events.length, source: input.source, ...root })}\n`,
        );
      });
    });
}

interface ReplayFlags {
  run?: string;
  as?: string;
  speed?: string;
  key?: string;
  artifactRoot?: string;
  adapter?: string;
}

export function registerBlueprint(program: Command): void {
  program
    .command('blueprint')
    .description("post a run's static topology (required nodes and artifacts) as a new blueprint run")
    .option(
      '--adapter <file>',
      "a project adapter; default: the bridge's (the repository's or the built-in one)",
    )
    .option('--as <runId>', 'the new run; default blueprint-<UTC time>-<6 hex>')
    .action(async (opts: { adapter?: string; as?: string }) => {
      await reporting(async () => {
        const adapterPath = opts.adapter === undefined ? undefined : await checkAdapterFile(opts.adapter);
        const call = bridgeCall('harness blueprint');
        const result = await blueprint(call, {
          ...(adapterPath === undefined ? {} : { adapterPath }),
          ...(opts.as === undefined ? {} : { as: opts.as }),
        });
        process.stdout.write(`${terminalJson(result)}\n`);
      });
    });
}

/** HARNESS_WATCH_SETTLE_MS and --settle-ms: an integer 10..60000 (ms); default 500. */
function settleOf(value: string | undefined): number {
  if (value === undefined) return 500;
  const ms = Number(value);
  if (!/^\d+$/.test(value) || ms < 10 || ms > 60_000)
    throw new UsageError('--settle-ms (or HARNESS_WATCH_SETTLE_MS) must be an integer from 10 to 60000');
  return ms;
}

export function registerWatch(program: Command): void {
  program
    .command('watch')
    .description(
      "post artifact.written (source watched-artifact) for each of the run's named artifacts that appears or changes, until SIGINT/SIGTERM",
    )
    .argument('<runId>', 'an existing live run (or one with no events yet)')
    .option('--root <dir>', "the run's artifact root; default: the current directory")
    .option(
      '--settle-ms <ms>',
      'a change is posted once its file stayed the same this long (default 500, or HARNESS_WATCH_SETTLE_MS)',
    )
    .action(async (runId: string, opts: { root?: string; settleMs?: string }) => {
      await reporting(async () => {
        const settleMs = settleOf(opts.settleMs ?? process.env['HARNESS_WATCH_SETTLE_MS']);
        const call = bridgeCall('harness watch');
        const warn = (line: string) => process.stderr.write(`${terminalText(`harness watch: ${line}`)}\n`);
        const out = (record: object) => process.stdout.write(`${terminalJson(record)}\n`);
        const watching = await startWatch(call, {
          runId,
          root: opts.root ?? process.cwd(),
          settleMs,
          warn,
          posted: out,
        });
        const stop = () => void watching.close();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        out({ watching: runId, root: watching.realRoot, artifacts: watching.artifacts });
        const summary = await watching.done;
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        const { error, ...figures } = summary;
        out(figures);
        if (error !== undefined) throw error;
        if (summary.undelivered > 0) {
          warn(
            `${summary.undelivered} change(s) were not delivered: the next harness watch of the run catches up`,
          );
          process.exitCode = 1;
        }
      });
    });
}
