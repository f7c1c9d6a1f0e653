import type { Command } from 'commander';
import type { FinishLineGate } from '../server/context.js';
import type { BridgeEnv } from '../server/env.js';
import { startBridge } from '../server/start.js';
import { StartupError } from '../storage/lease.js';
import { UsageError } from './env.js';
import { terminalText } from './terminal.js';

/** The finish-line gate `harness bridge` runs: validator children of this installed code. */
export async function finishLineGateFactory(): Promise<(e: BridgeEnv) => FinishLineGate> {
  const { createFinishLineGate } = await import('../validators/runner.js');
  return (e) =>
    createFinishLineGate({ concurrency: e.validatorConcurrency, deadlineMs: 120_000, workers: e.workers });
}

/** Runs a bridge until SIGINT/SIGTERM; a startup refusal is one line and exit code 2. */
export async function serveBridge(
  env: NodeJS.ProcessEnv,
): Promise<{ url: string; close: () => Promise<void>; leaseLost: Promise<string> }> {
  const makeFinishLine = await finishLineGateFactory();
  try {
    // Storage's reports name runs and quote reasons (agent-chosen paths among them).
    const log = (msg: string) => process.stderr.write(`harness bridge: ${terminalText(msg)}\n`);
    const bridge = await startBridge({ env, makeFinishLine, log });
    process.stdout.write(`Server listening at ${bridge.url}\n`);
    return bridge;
  } catch (err) {
    if (err instanceof StartupError) throw new UsageError(`bridge refuses to start: ${err.message}`);
    throw err;
  }
}

/**
 * A bridge that lost its lease has already closed itself: print its one line and exit 1, after
 * `beforeExit` (the quick start stops its UI there).
 */
export function exitWhenLeaseLost(leaseLost: Promise<string>, command: string, beforeExit = () => {}): void {
  void leaseLost.then((message) => {
    beforeExit();
    process.stderr.write(`harness ${command}: ${message}\n`);
    process.exit(1);
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
      exitWhenLeaseLost(bridge.leaseLost, 'bridge');
    });
}
