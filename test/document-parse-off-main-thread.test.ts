import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { DOCUMENT_MAX_BYTES } from '../src/contract/index.js';
import { cleanup, startTestBridge } from './helpers/bridge.js';
import { complete, driveToReady } from './helpers/complete-run.js';

/**
 * The run packet, review and RCA are agent-written, up to 8 MiB each, and the bridge reads the
 * artifact paths they name on every completion and every read of a completed run. A document
 * shaped to be slow to parse (4 Mi nested arrays: about a second of JSON.parse) must cost a pool
 * thread, never the event loop: a concurrent GET /health is answered while the completion runs.
 * And an unchanged document is parsed once, then answered by its digest.
 */
const depth = DOCUMENT_MAX_BYTES / 2 - 1;
const nested = (d: number) => `${'['.repeat(d)}${']'.repeat(d)}`;

/** Latencies of back-to-back unauthenticated health probes until `during` settles. */
async function probeHealth(url: string, during: Promise<unknown>): Promise<number[]> {
  let done = false;
  void during.finally(() => (done = true));
  const latencies: number[] = [];
  while (!done) {
    const t0 = performance.now();
    const r = await fetch(`${url}/health`);
    await r.arrayBuffer();
    latencies.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 5));
  }
  return latencies;
}

t.test('a slow-to-parse packet does not hold GET /health while a completion reads it', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'deep');
  const doc = nested(depth);
  await writeFile(join(b.t.artifactRoot, 'run/packet.json'), doc);
  // The yardstick: what one parse of the document costs on this machine, under its current load.
  const p0 = performance.now();
  JSON.parse(doc);
  const parseMs = performance.now() - p0;
  const bound = Math.max(250, parseMs / 2);
  const stats = b.ctx.pool.documents.stats;
  const parsedBefore = stats.parsed;

  const started = performance.now();
  const completion = complete(b, 'deep');
  const latencies = await probeHealth(b.url, completion);
  const took = performance.now() - started;
  const r = await completion;
  t.equal(r.status, 201, 'a packet that names nothing does not block the finish line');
  const worst = Math.max(...latencies);
  t.comment(
    `one parse ${parseMs.toFixed(0)} ms; completion ${took.toFixed(0)} ms; ` +
      `${latencies.length} probes, worst ${worst.toFixed(0)} ms`,
  );
  // Parsed on the event loop, the document held a probe for a whole parse (twice per completion);
  // off it, a probe waits only for its turn. Half a parse (at least 250 ms) is a generous bound
  // that scales with the machine's load, and still far below what the defect costs.
  t.ok(latencies.length >= 3, 'the health check was probed while the completion ran');
  t.ok(
    worst < bound,
    `no probe waited for a parse (worst ${worst.toFixed(0)} ms, bound ${bound.toFixed(0)})`,
  );

  // The gate checks the documents before and after its validators: the second pass is a hit.
  t.equal(stats.parsed - parsedBefore, 1, 'the packet was parsed once for the completion');
  const hits = stats.hits;
  t.equal((await b.req('GET', '/runs/deep')).body.run.status, 'completed');
  t.equal(stats.parsed - parsedBefore, 1, 'a read of the completed run parses nothing');
  t.ok(stats.hits > hits, 'its references came from the digest cache');

  // Other bytes, another digest: parsed again (and drift: the completion sealed the packet).
  await writeFile(join(b.t.artifactRoot, 'run/packet.json'), nested(depth - 1));
  t.equal((await b.req('GET', '/runs/deep')).body.run.status, 'quarantined');
  t.equal(stats.parsed - parsedBefore, 2, 'an edited packet is parsed again');
});
