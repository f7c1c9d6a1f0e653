import { createServer, type Server, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { AnswerReader, callBridge } from '../../src/connectors/bridge-client.js';
import { startTestBridge } from '../helpers/bridge.js';

/**
 * The hook's HTTP/1.1 client over `node:net`: what it sends, and which answers it reads. Anything
 * it cannot read whole is no answer (status 0), which its callers treat as "bridge down".
 */

interface Scripted {
  url: URL;
  /** Each request as the server received it, and whether the client half-closed before the answer. */
  seen: { text: string; endedEarly: boolean }[];
  server: Server;
}

/** A server answering every connection with `answer` (written in the given pieces), or nothing. */
async function scripted(
  t: Test,
  answer: (Buffer | string)[] | null,
  opts: { closeAfter?: boolean } = {},
): Promise<Scripted> {
  const seen: Scripted['seen'] = [];
  const server = createServer((socket: Socket) => {
    const entry = { text: '', endedEarly: false };
    seen.push(entry);
    socket.on('end', () => {
      entry.endedEarly = true;
    });
    socket.on('error', () => {});
    socket.on('data', async (chunk) => {
      entry.text += chunk.toString('latin1');
      const headEnd = entry.text.indexOf('\r\n\r\n');
      if (headEnd < 0 || answer === null) return;
      const length = Number(/content-length: (\d+)/.exec(entry.text)?.[1] ?? 0);
      if (entry.text.length - headEnd - 4 < length) return;
      for (const piece of answer) {
        socket.write(piece);
        await new Promise((r) => setTimeout(r, 2));
      }
      if (opts.closeAfter) socket.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as { port: number }).port;
  return { url: new URL(`http://127.0.0.1:${port}`), seen, server };
}

const JSON_ANSWER = (status: string, body: string) =>
  `HTTP/1.1 ${status}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

t.test('posts to a real bridge and reads its answers', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => b.close());
  const client = { url: new URL(b.url), token: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']! };
  const health = await callBridge(client, 'GET', '/health', undefined, 2000);
  t.equal(health.status, 200);
  t.equal((health as { body: Record<string, unknown> }).body['ok'], true);
  const created = await callBridge(client, 'POST', '/runs', { id: 'client-1' }, 2000);
  t.equal(created.status, 201, JSON.stringify(created));
  t.equal((await b.req('GET', '/runs/client-1')).status, 200, 'the run was created');
  const unknown = await callBridge(client, 'GET', '/runs/client-missing', undefined, 2000);
  t.equal(unknown.status, 404);
  t.equal((unknown as { body: Record<string, unknown> }).body['error'], 'run_not_found');
  const noToken = await callBridge({ ...client, token: '' }, 'GET', '/runs', undefined, 2000);
  t.equal(noToken.status, 401, 'no token: the bridge refuses');
  const publicHealth = await callBridge({ ...client, token: '' }, 'GET', '/health', undefined, 2000);
  t.equal(publicHealth.status, 200, 'no token header at all: the public health (an empty one is a 401)');
});

t.test('what goes on the wire: one request, never half-closed before the answer', async (t) => {
  const s = await scripted(t, [JSON_ANSWER('201 Created', '{"ok":true}')]);
  const a = await callBridge(
    { url: s.url, token: 'tok-1' },
    'POST',
    '/runs/r%2F1/events?x=1',
    { a: 'é' },
    2000,
  );
  t.same(a, { status: 201, body: { ok: true } });
  const [req] = s.seen;
  const [head, body] = req!.text.split('\r\n\r\n');
  t.same(head!.split('\r\n'), [
    'POST /runs/r%2F1/events?x=1 HTTP/1.1',
    `host: ${s.url.host}`,
    'x-harness-bridge-token: tok-1',
    'connection: close',
    'content-type: application/json',
    'content-length: 10',
  ]);
  t.equal(Buffer.from(body!, 'latin1').toString('utf8'), '{"a":"é"}');
  t.notOk(req!.endedEarly, 'the request side stayed open until the answer');
});

t.test('answers read whole, however they arrive', async (t) => {
  const text = JSON_ANSWER('409 Conflict', '{"ok":false,"error":"run_already_exists","message":"é"}');
  const bytes = Buffer.from(text, 'utf8');
  const oneByOne = [...bytes].map((x) => Buffer.from([x]));
  const split = await scripted(t, oneByOne);
  t.same(await callBridge({ url: split.url, token: 'x' }, 'GET', '/', undefined, 5000), {
    status: 409,
    body: { ok: false, error: 'run_already_exists', message: 'é' },
  });
  const noLength = await scripted(t, ['HTTP/1.1 200 OK\r\n\r\n{"ok":', 'true}'], { closeAfter: true });
  t.same(await callBridge({ url: noLength.url, token: 'x' }, 'GET', '/', undefined, 2000), {
    status: 200,
    body: { ok: true },
  });
  const chunked = await scripted(t, [
    'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n',
    '5;ext=1\r\n{"ok"\r\n',
    '6\r\n:true,\r\n',
    'A\r\n"seq":12}\n\r\n0\r\nx-trailer: 1\r\n\r\n',
  ]);
  t.same(await callBridge({ url: chunked.url, token: 'x' }, 'GET', '/', undefined, 2000), {
    status: 201,
    body: { ok: true, seq: 12 },
  });
  const notJson = await scripted(t, [JSON_ANSWER('502 Bad Gateway', '<html>')]);
  t.same(await callBridge({ url: notJson.url, token: 'x' }, 'GET', '/', undefined, 2000), {
    status: 502,
    body: {},
  });
});

t.test('what is no answer', async (t) => {
  const cases: [string, (string | Buffer)[] | null, RegExp, { closeAfter?: boolean }?][] = [
    ['not HTTP', ['SSH-2.0-OpenSSH\r\n\r\n'], /not an HTTP\/1\.1 answer/],
    ['an interim status', ['HTTP/1.1 100 Continue\r\n\r\n'], /not an HTTP\/1\.1 answer/],
    ['gzip', ['HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n'], /transfer encoding .*\(gzip\)/],
    [
      'a length and chunked',
      ['HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'],
      /both a length and a transfer encoding/,
    ],
    [
      'chunked twice',
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n'],
      /transfer encoding/,
    ],
    [
      'a chunk size not hex',
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2zz\r\n{}\r\n0\r\n\r\n'],
      /malformed chunk/,
    ],
    [
      'a chunk longer than said',
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\n{}\r\n'],
      /malformed chunk/,
    ],
    [
      'chunked, closed before the last chunk',
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n'],
      /closed the connection/,
      { closeAfter: true },
    ],
    [
      'two lengths',
      ['HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}'],
      /content-length/,
    ],
    ['a signed length', ['HTTP/1.1 200 OK\r\ncontent-length: +2\r\n\r\n{}'], /content-length/],
    ['a length over the bound', ['HTTP/1.1 200 OK\r\ncontent-length: 3000000\r\n\r\n'], /too large/],
    ['a head without end', [`HTTP/1.1 200 OK\r\n${'x-pad: y\r\n'.repeat(2000)}`], /too large/],
    [
      'cut short',
      ['HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{}'],
      /closed the connection/,
      { closeAfter: true },
    ],
    ['closed before any head', [], /closed the connection/, { closeAfter: true }],
    [
      'a head over 16 KiB in one piece',
      [`HTTP/1.1 200 OK\r\n${'x-pad: y\r\n'.repeat(2000)}\r\n{}`],
      /too large/,
    ],
    [
      'a body over 2 MiB, no length',
      ['HTTP/1.1 200 OK\r\n\r\n', Buffer.alloc(2 * 1024 * 1024 + 1, 32)],
      /too large/,
    ],
    [
      'a header line without a colon',
      ['HTTP/1.1 200 OK\r\nbroken\r\ncontent-length: 2\r\n\r\n{}'],
      /malformed header/,
    ],
    ['a space before the colon', ['HTTP/1.1 200 OK\r\ncontent-length : 2\r\n\r\n{}'], /malformed header/],
    ['silence', null, /no answer within 300 ms/],
  ];
  for (const [what, answer, why, opts] of cases) {
    const s = await scripted(t, answer, opts);
    // A deadline well past any answer, but for the silent server's.
    const deadline = answer === null ? 300 : 5000;
    const a = await callBridge({ url: s.url, token: 'x' }, 'GET', '/', undefined, deadline);
    t.equal(a.status, 0, what);
    t.match((a as { why?: string }).why, why, what);
  }
});

t.test(
  'tokens: what node:http would send is sent; a line break or a wider character is refused',
  async (t) => {
    const s = await scripted(t, [JSON_ANSWER('200 OK', '{}')]);
    for (const token of ['a\r\nx-evil: 1', 'a\nb', 'Ā-wide']) {
      const a = await callBridge({ url: s.url, token }, 'GET', '/', undefined, 2000);
      t.match(a, { status: 0, why: /cannot carry/ }, JSON.stringify(token));
    }
    t.equal(s.seen.length, 0, 'no connection was made');
    for (const token of ['correct horse battery staple', 'tök\tx']) {
      t.equal((await callBridge({ url: s.url, token }, 'GET', '/', undefined, 2000)).status, 200);
      t.match(s.seen.at(-1)!.text, `\r\nx-harness-bridge-token: ${token}\r\n`, JSON.stringify(token));
    }
    await callBridge({ url: s.url, token: '' }, 'GET', '/', undefined, 2000);
    t.notMatch(s.seen.at(-1)!.text, /x-harness-bridge-token/i, 'no token: no header');
  },
);

t.test('nothing listening: no answer, at once', async (t) => {
  // Port 1 on loopback: nothing here listens there, and no test takes it.
  const a = await callBridge({ url: new URL('http://127.0.0.1:1'), token: 'x' }, 'GET', '/', undefined, 2000);
  t.match(a, { status: 0, why: 'nothing listens there' });
});

t.test('AnswerReader: the same answer however it is split into reads', async (t) => {
  const answers: [string, string][] = [
    ['length', JSON_ANSWER('201 Created', '{"ok":true,"seq":12}')],
    [
      'chunked',
      'HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\n\r\n5;x=1\r\n{"ok"\r\n6\r\n:true,\r\n9\r\n"seq":12}\r\n0\r\n\r\n',
    ],
  ];
  for (const [what, text] of answers) {
    const bytes = Buffer.from(text, 'latin1');
    const want = { status: 201, body: { ok: true, seq: 12 } };
    let wrong = 0;
    for (let cut = 1; cut < bytes.length; cut++)
      for (const pieces of [
        [bytes.subarray(0, cut), bytes.subarray(cut)],
        [...bytes].map((x) => Buffer.from([x])),
      ]) {
        const reader = new AnswerReader();
        let answer = null;
        for (const piece of pieces) answer ??= reader.push(piece);
        if (JSON.stringify(answer) !== JSON.stringify(want)) wrong++;
      }
    t.equal(wrong, 0, `${what}: split at each of ${bytes.length - 1} places, and byte by byte`);
    // A chunked body is whole at its last chunk's size line (`0\r\n`); trailers are not waited for.
    const early = new AnswerReader();
    const last = what === 'chunked' ? bytes.length - 3 : bytes.length - 1;
    t.equal(early.push(bytes.subarray(0, last)), null, `${what}: nothing before its last byte`);
  }
});

t.test('AnswerReader: a chunked body of many small chunks is read in linear time', async (t) => {
  // 2 MiB of 7-byte chunks in 1 KiB reads took minutes when each read re-decoded the whole body.
  const chunk = '7\r\n"aaaa",\r\n';
  const count = Math.floor((2 * 1024 * 1024 - 200) / chunk.length);
  const text = `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\n[\r\n${chunk.repeat(count)}3\r\n"a"\r\n1\r\n]\r\n0\r\n\r\n`;
  const bytes = Buffer.from(text, 'latin1');
  const reader = new AnswerReader();
  const startedAt = performance.now();
  let answer = null;
  for (let at = 0; at < bytes.length && answer === null; at += 1024)
    answer = reader.push(bytes.subarray(at, at + 1024));
  const ms = performance.now() - startedAt;
  t.equal(answer?.status, 200, 'read whole');
  t.same((answer as { body: unknown }).body, {}, 'an array is not an answer body');
  t.ok(
    ms < 10_000,
    `${ms.toFixed(0)} ms for ${bytes.length} bytes in ${Math.ceil(bytes.length / 1024)} reads`,
  );
});
