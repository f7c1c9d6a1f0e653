import { randomBytes } from 'node:crypto';
import type { BridgeClient } from '../connectors/bridge-client.js';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { type BridgeCall, SourceError } from './client.js';
import { readLiveRun } from './live-run.js';
import { type DeliverySummary, RelayDelivery } from './relay-delivery.js';
import { buildRelayServer } from './relay-server.js';

export interface RelayOptions {
  runId: string;
  /** Allowed Origin values, already checked (relayOrigin). */
  origins: readonly string[];
  /** 0: an ephemeral port. */
  port: number;
  /** Where the outbox lives (`~/.harness/outbox/`). */
  home: string;
  warn: (line: string) => void;
}

export interface Relay {
  /** `http://127.0.0.1:PORT/e/<capability>`: the one URL a page posts to. */
  url: string;
  /** Stops accepting, finishes what is under way and offers the outbox once more, within `budgetMs`. */
  close(budgetMs: number): Promise<DeliverySummary>;
}

/**
 * `harness browser-relay`: checks the run as `harness watch` does, then listens on 127.0.0.1 for
 * pages of the allowed origins and forwards each event they post (live, browser-local) to the
 * bridge, through the run's outbox when the bridge does not answer (docs/sources.md).
 */
export async function startRelay(call: BridgeCall, client: BridgeClient, opts: RelayOptions): Promise<Relay> {
  if (!RUN_ID_PATTERN.test(opts.runId)) throw new SourceError('the run ID is not canonical', 2);
  const run = await readLiveRun(call, opts.runId, 'relay to');
  if (run === null) throw new SourceError(`the bridge did not answer for run ${opts.runId}`, 1);
  // The capability is the relay's only credential toward pages: whoever holds the URL may post.
  const capability = randomBytes(32).toString('base64url');
  const delivery = new RelayDelivery(client, opts.home, opts.runId, opts.warn);
  const app = buildRelayServer({
    capability,
    origins: new Set(opts.origins),
    deliver: (event) => delivery.submit(event),
  });
  try {
    await app.listen({ host: '127.0.0.1', port: opts.port });
  } catch (err) {
    throw new SourceError(`cannot listen on 127.0.0.1:${opts.port}: ${(err as Error).message}`, 2);
  }
  const { port } = app.server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/e/${capability}`,
    close: async (budgetMs) => {
      const until = Date.now() + budgetMs;
      // Requests under way are answered; new connections are refused from here on. Whatever is
      // still open when the budget is spent (a client holding a half-sent request) is cut off, so
      // that nothing keeps the process alive after its summary.
      const closed = app.close().then(() => true);
      const inTime = await Promise.race([
        closed,
        new Promise<false>((r) => setTimeout(r, budgetMs, false).unref()),
      ]);
      if (!inTime) app.server.closeAllConnections();
      return delivery.close(Math.max(0, until - Date.now()));
    },
  };
}

/**
 * An `--origin` value: exactly what a browser sends as Origin (`scheme://host[:port]`, http or https,
 * lower-case, no default port, no path), since requests are matched by exact comparison.
 */
export function relayOrigin(value: string): string {
  const url = URL.canParse(value) ? new URL(value) : null;
  const web = url !== null && (url.protocol === 'http:' || url.protocol === 'https:');
  if (!web || url.origin !== value)
    throw new SourceError(
      `--origin ${value} is not an origin: give scheme://host[:port] as the browser sends it${web ? ` (${url.origin}?)` : ''}`,
      2,
    );
  return value;
}
