import { readdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { clientToken } from '../connectors/config.js';
import { refusal } from '../connectors/context.js';
import { flushFile, isOutboxFileName, outboxDir } from '../connectors/outbox.js';
import { NOT_AGENT_SIDE } from '../contract/agent-side.js';
import { bridgeUrl, refuseCredentials, UsageError } from './env.js';
import { terminalText } from './terminal.js';

/** How long one flush may take for all runs together. */
const FLUSH_BUDGET_MS = 120_000;

/**
 * `harness outbox flush`: delivers every event the hooks queued while the bridge was down, run by
 * run, each run's in order. Exit 0 when every outbox is empty, 1 when events still wait or the
 * bridge refused some (each named on stderr), 2 usage or environment.
 */
export function registerOutbox(program: Command): void {
  const outbox = program
    .command('outbox')
    .description('events the connector hooks queued while the bridge was down');
  outbox
    .command('flush')
    .description(
      'deliver every queued event, in order (token from HARNESS_BRIDGE_ACCESS_TOKEN or connector.json)',
    )
    .action(async () => {
      refuseCredentials(NOT_AGENT_SIDE, 'harness outbox');
      const token = await clientToken(process.env, process.cwd());
      if (token === null)
        throw new UsageError(
          'HARNESS_BRIDGE_ACCESS_TOKEN is not set, and no connector.json names a tokenFile',
        );
      const client = { url: bridgeUrl(), token };
      const dir = outboxDir(process.env['HOME'] || homedir());
      const files = (await readdir(dir).catch(() => [] as string[])).filter(isOutboxFileName);
      const until = Date.now() + FLUSH_BUDGET_MS;
      let stored = 0;
      let left = 0;
      let refused = 0;
      for (const f of files.sort()) {
        const r = await flushFile(client, join(dir, f), Math.max(1, until - Date.now()));
        stored += r.stored;
        left += r.left;
        refused += r.refused.length;
        for (const x of r.refused)
          process.stderr.write(
            `${terminalText(`refused ${String(x.event['type'])} ${x.event.id}: ${refusal(x.answer.body)}`)}\n`,
          );
        if (r.left > 0)
          process.stderr.write(`${terminalText(`${r.left} event(s) still wait in ${f}: ${r.why ?? ''}`)}\n`);
      }
      process.stdout.write(`delivered ${stored}, refused ${refused}, waiting ${left}\n`);
      process.exitCode = left > 0 || refused > 0 ? 1 : 0;
    });
}
