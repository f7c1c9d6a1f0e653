import type { Command } from 'commander';
import type { FinishLineGate } from '../server/context.js';
import { dataDirFrom } from '../server/data-dir.js';
import type { BridgeEnv } from '../server/env.js';
import { heapGrowthGovernor } from '../server/heap-growth.js';
import type { SelfStop } from '../server/start.js';
import { StartupError } from '../storage/lease.js';
import { StartupReader } from '../storage/startup-read.js';
import type { ValidatorObserver } from '../validators/runner.js';
import { UsageError } from './env.js';
import { terminalText } from './terminal.js';

/** The finish-line gate `harness bridge` runs: validator children of this installed code. */
export async function finishLineGateFactory(): Promise<
  (e: BridgeEnv, observer?: ValidatorObserver) => FinishLineGate
> {
  const { createFinishLineGate } = await import('../validators/runner.js');
  return (e, observer) =>
    createFinishLineGate({
      concurrency: e.validatorConcurrency,
      deadlineMs: 120_000,
      workers: e.workers,
      ...(observer ? { observer } : {}),
    });
}

/** Runs a bridge until SIGINT/SIGTERM; a startup refusal is one line and exit code 2. */
export async function serveBridge(
  env: NodeJS.ProcessEnv,
): Promise<{ url: string; close: () => Promise<void>; stopped: Promise<SelfStop> }> {
  // Made before the bridge's modules load, so that its thread loads beside them (a file store's
  // only: a database URL, checked or not, means none).
  const reader = env['HARNESS_DATABASE_URL'] ? null : await StartupReader.forDataDir(dataDirFrom(env));
  const [{ startBridge }, makeFinishLine] = await Promise.all([
    import('../server/start.js'),
    finishLineGateFactory(),
  ]).catch(async (err: Error) => {
    await reader?.cancel();
    throw err;
  });
  try {
    // Storage's reports name runs and quote reasons (agent-chosen paths among them).
    const log = (msg: string) => process.stderr.write(`harness bridge: ${terminalText(msg)}\n`);
    const onEvict = heapGrowthGovernor()?.noteEviction;
    const bridge = await startBridge({
      env,
      makeFinishLine,
      log,
      logTo: process.stdout,
      reader,
      ...(onEvict ? { onEvict } : {}),
    });
    process.stdout.write(`Server listening at ${bridge.url}\n`);
    return bridge;
  } catch (err) {
    if (err instanceof StartupError) throw new UsageError(`bridge refuses to start: ${err.message}`);
    throw err;
  }
}

/**
 * The exit status of a bridge that stopped because a write or sync of its storage, or its
 * listening socket, failed: EX_IOERR of sysexits.h (systemd shows it as `74/IOERR`). It is not 2,
 * so the unit restarts the bridge (docs/operations.md "Logs").
 */
export const EXIT_IO_FAILED = 74;

/**
 * A bridge that stopped on its own (SelfStop) has already closed itself: print its one line and
 * exit non-zero, after `beforeExit` (the quick start stops its UI there). A lost lease exits 1; a
 * failed storage or listener EXIT_IO_FAILED, the line saying that a supervisor restarts it.
 */
export function exitWhenStopped(stopped: Promise<SelfStop>, command: string, beforeExit = () => {}): void {
  void stopped.then(({ cause, message }) => {
    beforeExit();
    const line = cause === 'lease' ? message : `${message}; exiting so a supervisor restarts it`;
    process.stderr.write(`harness ${command}: ${terminalText(line)}\n`);
    process.exit(cause === 'lease' ? 1 : EXIT_IO_FAILED);
  });
}

export function closeOnSignal(close: () => Promise<void>): void {
  const stop = () => {
    void close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

export function registerBridge(program: Command): void {
  program
    .command('bridge')
    .description('serve the bridge on the loopback interface (HARNESS_BRIDGE_HOST:HARNESS_BRIDGE_PORT)')
    .action(async () => {
      const bridge = await serveBridge(process.env);
      closeOnSignal(bridge.close);
      exitWhenStopped(bridge.stopped, 'bridge');
    });
}
