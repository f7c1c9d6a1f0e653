import { homedir } from 'node:os';
import type { Command } from 'commander';
import { relayOrigin, startRelay } from '../sources/relay.js';
import { bridgeUrl, refuseCredentials, requireEnv, UsageError } from './env.js';
import { bridgeCall, reporting } from './source-call.js';
import { terminalJson, terminalText } from './terminal.js';

/** How long a stop may take: requests under way answered, the outbox offered once more. */
const CLOSE_MS = 10_000;

function portOf(value: string | undefined): number {
  if (value === undefined) return 0;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65_535)
    throw new UsageError('--port must be an integer from 0 to 65535');
  return port;
}

const collect = (value: string, all: string[]) => [...all, value];

export function registerBrowserRelay(program: Command): void {
  program
    .command('browser-relay')
    .description(
      'forward events that pages of the given origins post (source browser-local) to a live run, until SIGINT/SIGTERM',
    )
    .argument('<runId>', 'an existing live run (or one with no events yet)')
    .option(
      '--origin <origin>',
      'a page origin allowed to post, scheme://host[:port] (repeatable)',
      collect,
      [],
    )
    .option('--port <port>', 'the port on 127.0.0.1; default: an ephemeral one')
    .action(async (runId: string, opts: { origin: string[]; port?: string }) => {
      await reporting(async () => {
        if (opts.origin.length === 0) throw new UsageError('at least one --origin is required');
        const origins = opts.origin.map(relayOrigin);
        const port = portOf(opts.port);
        // A page must never reach the human's decisions through the relay: it holds no human token.
        refuseCredentials(['HARNESS_HUMAN_APPROVAL_TOKEN'], 'harness browser-relay');
        const call = bridgeCall('harness browser-relay');
        const client = { url: bridgeUrl(), token: requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN') };
        const warn = (line: string) =>
          process.stderr.write(`${terminalText(`harness browser-relay: ${line}`)}\n`);
        const relay = await startRelay(call, client, {
          runId,
          origins,
          port,
          home: process.env['HOME'] || homedir(),
          warn,
        });
        const signalled = new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        process.stdout.write(`${terminalJson({ relay: relay.url, runId, origins })}\n`);
        await signalled;
        const summary = await relay.close(CLOSE_MS);
        process.stdout.write(`${terminalJson({ runId, ...summary })}\n`);
        if (summary.waiting > 0)
          warn(`${summary.waiting} event(s) wait in the outbox: \`harness outbox flush\` delivers them`);
      });
    });
}
