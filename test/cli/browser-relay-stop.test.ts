import { connect, type Socket } from 'node:net';
import t from 'tap';
import { REQUEST_MS } from '../../src/sources/relay-server.js';
import { json } from '../helpers/recording-upstream.js';
import { PAGE, startStubbedRelay } from '../helpers/relay.js';
import { pause } from '../helpers/watcher.js';

/**
 * `harness browser-relay` and a client holding a half-sent request (docs/sources.md, "Stop"): the
 * request is cut off after REQUEST_MS, and a stop meanwhile still exits within its 10 s budget.
 */

/** The stop's budget (src/cli/browser-relay.ts), and what an exit may take beyond it. */
const CLOSE_MS = 10_000;
const SLACK_MS = 2500;

/** Opens a connection to the relay and sends the headers of a POST and a part of its body, no more. */
async function halfSent(url: string): Promise<{ socket: Socket; answer: Promise<string> }> {
  const { host, port, pathname } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString()));
  const answer = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
  socket.on('error', () => {});
  socket.write(
    `POST ${pathname} HTTP/1.1\r\nHost: ${host}\r\nOrigin: ${PAGE}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{"type":"gate.fired",',
  );
  return { socket, answer };
}

t.test('a half-sent request: cut off by itself, and no reason for a stop to hang', async (t) => {
  const stored = json(201, { ok: true, seq: 1, event: {}, run: {} });
  const [held, stopped] = await Promise.all([
    startStubbedRelay(t, 'r-held', stored),
    startStubbedRelay(t, 'r-stopped', stored),
  ]);
  const posts = (s: typeof held) => s.upstream.received.filter((r) => r.method === 'POST').length;

  const cutOff = (async () => {
    const start = Date.now();
    const { answer } = await halfSent(held.relay.url);
    const text = await answer;
    return { text, ms: Date.now() - start };
  })();
  const stop = (async () => {
    const { socket } = await halfSent(stopped.relay.url);
    // The relay has read the headers and waits for the rest: the request is under way.
    await pause(500);
    const start = Date.now();
    const code = await stopped.relay.stop('SIGTERM');
    socket.destroy();
    return { code, ms: Date.now() - start };
  })();

  const [cut, end] = await Promise.all([cutOff, stop]);
  t.equal(end.code, 0, stopped.relay.stderr());
  t.ok(end.ms < CLOSE_MS + SLACK_MS, `the stop exited after ${end.ms} ms`);
  t.match(stopped.relay.records.at(-1), {
    runId: 'r-stopped',
    delivered: 0,
    refused: 0,
    queued: 0,
    waiting: 0,
  });
  t.match(cut.text, /^HTTP\/1\.1 408 /, 'the held request is answered 408');
  t.ok(
    cut.ms >= REQUEST_MS - 1000 && cut.ms < REQUEST_MS + SLACK_MS,
    `cut off after ${cut.ms} ms (${REQUEST_MS} ms allowed)`,
  );
  t.same([posts(held), posts(stopped)], [0, 0], 'nothing was posted to the bridge');
  t.equal(await held.relay.stop(), 0);
});
