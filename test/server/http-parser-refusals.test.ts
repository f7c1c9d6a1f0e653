import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { assertEnvelope, rawBytes } from '../helpers/expect.js';
import { SECURITY_HEADERS, startUi } from '../helpers/ui-server.js';

/**
 * CONTRACT 3: every failure is the envelope. Node's HTTP parser refuses some requests before any
 * route or hook runs (Fastify then answers with its own body); both servers answer those in the
 * envelope too, echo nothing of the request and close the connection, and a request without Host
 * reaches the Host check. Nothing is stored.
 */
t.test('the bridge answers what the HTTP parser refuses in the envelope', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const host = new URL(b.url).host;
  t.equal((await b.req('POST', '/runs/p1/events', ev())).status, 201);
  const before = await b.journal('p1');
  const post = (headers: string, body: string) =>
    `POST /runs/p1/events HTTP/1.1\r\nhost: ${host}\r\nx-harness-bridge-token: ${token}\r\ncontent-type: application/json\r\n${headers}\r\n${body}`;
  const event = JSON.stringify(ev({ id: 'parser-1' }));
  const cases: [string, string, number, string][] = [
    [
      'more body bytes than Content-Length says',
      post(`content-length: 10\r\n`, `${event}${event}`),
      400,
      'malformed_request',
    ],
    [
      'a control byte in a header',
      post(`x-note: a\u0001b\r\ncontent-length: ${event.length}\r\n`, event),
      400,
      'malformed_request',
    ],
    ['a malformed request line', 'GET /runs HTTP/9.9 extra\r\n\r\n', 400, 'malformed_request'],
    [
      'a header section past 16 KiB',
      post(`x-pad: ${'p'.repeat(20_000)}\r\ncontent-length: ${event.length}\r\n`, event),
      431,
      'request_headers_too_large',
    ],
    ['no Host header', `GET /health HTTP/1.1\r\nconnection: close\r\n\r\n`, 403, 'host_not_allowed'],
    ['CONNECT', `CONNECT 127.0.0.1:1 HTTP/1.1\r\nhost: ${host}\r\n\r\n`, 404, 'not_found'],
  ];
  for (const [name, bytes, status, code] of cases) {
    const res = await rawBytes(b.url, bytes);
    t.equal(res.status, status, `${name}: ${status}`);
    assertEnvelope(t, res.body, code);
    t.notMatch(JSON.stringify(res.body), /parser-1|pppp|HTTP\/9/, `${name}: nothing of the request echoed`);
  }
  t.ok((await b.journal('p1')).equals(before), 'journal bytes unchanged');
  t.equal((await b.req('GET', '/runs/p1')).body['run'].eventCount, 1, 'the run holds only its first event');
  t.equal((await b.req('POST', '/runs/p1/events', ev())).status, 201, 'the bridge still serves');
});

/** Answers written straight to the socket, past the UI server's hooks, still carry its headers. */
const UI_HEADERS = { ...SECURITY_HEADERS, 'cache-control': 'no-store' };

function headersOf(head: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    out[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return out;
}

t.test('the UI server answers them in the envelope, and CONNECT with 405', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const ui = await startUi(new URL(b.url));
  t.teardown(() => ui.app.close());
  const malformed = await rawBytes(ui.origin, `GET / HTTP/1.1\r\nhost: ${ui.host}\r\nx-a: \u0001\r\n\r\n`);
  t.equal(malformed.status, 400);
  assertEnvelope(t, malformed.body, 'malformed_request');
  t.has(headersOf(malformed.head), UI_HEADERS, 'a control byte: the UI headers');
  const big = await rawBytes(
    ui.origin,
    `GET / HTTP/1.1\r\nhost: ${ui.host}\r\nx-pad: ${'p'.repeat(20_000)}\r\n\r\n`,
  );
  t.equal(big.status, 431);
  assertEnvelope(t, big.body, 'request_headers_too_large');
  t.has(headersOf(big.head), UI_HEADERS, 'a 20 kB header: the UI headers');
  const noHost = await rawBytes(ui.origin, 'GET /api/bridge/runs HTTP/1.1\r\nconnection: close\r\n\r\n');
  t.equal(noHost.status, 403);
  assertEnvelope(t, noHost.body, 'host_not_allowed');
  const connect = await rawBytes(ui.origin, `CONNECT 127.0.0.1:1 HTTP/1.1\r\nhost: ${ui.host}\r\n\r\n`);
  t.equal(connect.status, 405);
  assertEnvelope(t, connect.body, 'method_not_allowed');
  t.match(connect.head, /\r\nallow: GET(\r\n|$)/, 'allow: GET');
  t.has(headersOf(connect.head), UI_HEADERS, 'CONNECT: the UI headers');
});
