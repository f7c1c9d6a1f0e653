import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { bridgeUrl, UsageError } from '../../src/cli/env.js';
import { bridgeRequest } from '../../src/cli/http.js';
import { CLI } from '../helpers/paths.js';

/**
 * Every client command (emit, approve, run create, explain, ui, mcp) sends a credential to
 * HARNESS_BRIDGE_URL, so it must be an http:// URL on a loopback host; anything else is a usage
 * error (exit 2) before any connection. Needs `npm run build`.
 */

t.test('bridgeUrl accepts loopback http:// URLs only', async (t) => {
  for (const url of ['http://127.0.0.1:8787', 'http://localhost:1', 'http://[::1]:8787', 'http://127.9.9.9'])
    t.equal(bridgeUrl({ HARNESS_BRIDGE_URL: url }).protocol, 'http:', url);
  t.equal(bridgeUrl({}).href, 'http://127.0.0.1:8787/', 'the default');
  for (const url of [
    'http://10.0.0.5:8787',
    'http://192.0.2.1:8787',
    'http://example.com',
    'http://127.0.0.1.nip.io:8787',
    'http://0.0.0.0:8787',
    'https://127.0.0.1:8787',
    'file:///etc/passwd',
    'not a url',
    // The bridge answers at its origin: a user, password, path, query or fragment is a mistake
    // (fetch refuses credentials in a URL and would echo them; a path would be dropped).
    'http://user:pw@127.0.0.1:8787',
    'http://user@127.0.0.1:8787',
    'http://:pw@127.0.0.1:8787',
    'http://127.0.0.1:8787/prefix/',
    'http://127.0.0.1:8787/?x=1',
    'http://127.0.0.1:8787/#x',
  ]) {
    t.throws(() => bridgeUrl({ HARNESS_BRIDGE_URL: url }), UsageError, url);
  }
});

/**
 * A server on this machine standing for a remote host, which must never see a request: the URL
 * names it by 0.0.0.0, which reaches this machine's server but is not a loopback address.
 */
async function remoteStandIn(t: Test): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as { port: number }).port;
  return { url: `http://0.0.0.0:${port}`, requests: () => requests };
}

t.test('harness emit refuses a remote bridge URL with exit 2 and sends nothing', async (t) => {
  const remote = await remoteStandIn(t);
  const env = {
    PATH: process.env['PATH'] ?? '',
    HOME: t.testdirName,
    HARNESS_BRIDGE_URL: remote.url,
    HARNESS_BRIDGE_ACCESS_TOKEN: 'a'.repeat(43),
  };
  const r = await new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [CLI, 'emit', 'run-x', 'node.entered', 'intake', 'hi'],
      { env },
      (err, _o, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
  });
  t.equal(r.code, 2, r.stderr);
  t.match(r.stderr, /HARNESS_BRIDGE_URL must be an http:\/\/ loopback URL/);
  t.equal(remote.requests(), 0, 'no request, so no token, left for that host');
});

t.test('harness mcp refuses a remote bridge URL before it serves: exit 2, nothing answered', async (t) => {
  // The tool server makes its requests only when a tool is called, so the URL is checked at start:
  // an agent's client would otherwise get a working server that sends the token off the machine.
  const remote = await remoteStandIn(t);
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } },
  };
  const r = await execa(process.execPath, [CLI, 'mcp'], {
    extendEnv: false,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: t.testdirName,
      HARNESS_BRIDGE_URL: remote.url,
      HARNESS_BRIDGE_ACCESS_TOKEN: 'a'.repeat(43),
    },
    input: `${JSON.stringify(initialize)}\n`,
    reject: false,
    timeout: 20_000,
  });
  t.equal(r.exitCode, 2, r.stderr);
  t.equal(r.stderr, 'harness: HARNESS_BRIDGE_URL must be an http:// loopback URL', 'one line naming it');
  t.equal(r.stdout, '', 'nothing on the protocol channel: the initialize request got no answer');
  t.equal(remote.requests(), 0, 'no request, so no token, left for that host');
});

t.test('a bridge nobody listens for: one line saying how to start it or where to point', async (t) => {
  // Port 2, where nothing listens, stands for a bridge that was never started (a port just
  // released could be taken by another process meanwhile; fetch refuses port 9 as a bad port).
  const port = 2;
  const url = `http://127.0.0.1:${port}`;
  await t.rejects(bridgeRequest('/health', {}, { HARNESS_BRIDGE_URL: url }), {
    message: `cannot reach the bridge at ${url}: connect ECONNREFUSED 127.0.0.1:${port}; is the bridge running (\`npm start\` or \`harness bridge\`)? If it listens elsewhere, set HARNESS_BRIDGE_URL`,
  });
  // Every client command makes its requests there: emit prints the line as it is, exit 1.
  const r = await new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [CLI, 'emit', 'run-x', 'node.entered', 'intake', 'hi'],
      {
        env: {
          PATH: process.env['PATH'] ?? '',
          HOME: t.testdirName,
          HARNESS_BRIDGE_URL: url,
          HARNESS_BRIDGE_ACCESS_TOKEN: 'a'.repeat(43),
        },
      },
      (err, _o, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
  });
  t.equal(r.code, 1, r.stderr);
  t.match(
    r.stderr,
    /^harness: cannot reach the bridge at .*; is the bridge running \(`npm start` or `harness bridge`\)\? If it listens elsewhere, set HARNESS_BRIDGE_URL\n$/,
  );
});
