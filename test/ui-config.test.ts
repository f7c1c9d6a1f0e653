import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { Command } from 'commander';
import t, { type Test } from 'tap';
import { UsageError } from '../src/cli/env.js';
import { registerUi } from '../src/cli/ui.js';
import { ERROR_CODES } from '../src/contract/errors.js';
import { isLoopbackHost } from '../src/contract/loopback.js';
import { loadUiConfig } from '../src/ui/config.js';
import { UI_ERROR_CODES, UI_SHARED_CODES } from '../src/ui/errors.js';
import { CLI, exitOf } from './helpers/cli.js';
import { ROOT } from './helpers/paths.js';

const GOOD = { HARNESS_BRIDGE_ACCESS_TOKEN: 'ui-config-access-token-0123456789abcdef' };

t.test('defaults: loopback 8788, the default bridge, a 10 s deadline', async (t) => {
  const c = loadUiConfig(GOOD);
  t.equal(c.host, '127.0.0.1');
  t.equal(c.port, 8788);
  t.equal(c.timeoutMs, 10_000);
  t.equal(c.bridgeUrl.origin, 'http://127.0.0.1:8787');
  t.equal(loadUiConfig({ ...GOOD, HARNESS_UI_PORT: '0', HARNESS_BRIDGE_PROXY_TIMEOUT_MS: '100' }).port, 0);
  t.equal(loadUiConfig({ ...GOOD, HARNESS_BRIDGE_PROXY_TIMEOUT_MS: '120000' }).timeoutMs, 120_000);
  t.equal(loadUiConfig({ ...GOOD, HARNESS_UI_HOST: '::1' }).host, '::1');
  t.equal(loadUiConfig({ ...GOOD, HARNESS_UI_HOST: '[::1]' }).host, '::1', 'as a URL writes it');
});

t.test('each refusal names its variable', async (t) => {
  const cases: [Record<string, string>, string][] = [
    [{ HARNESS_BRIDGE_INTEGRITY_KEY: 'k'.repeat(40) }, 'HARNESS_BRIDGE_INTEGRITY_KEY'],
    [{ HARNESS_HUMAN_APPROVAL_TOKEN: 'h'.repeat(40) }, 'HARNESS_HUMAN_APPROVAL_TOKEN'],
    [{ HARNESS_BRIDGE_PROXY_TIMEOUT_MS: '99' }, 'HARNESS_BRIDGE_PROXY_TIMEOUT_MS'],
    [{ HARNESS_BRIDGE_PROXY_TIMEOUT_MS: '120001' }, 'HARNESS_BRIDGE_PROXY_TIMEOUT_MS'],
    [{ HARNESS_BRIDGE_PROXY_TIMEOUT_MS: '1e4' }, 'HARNESS_BRIDGE_PROXY_TIMEOUT_MS'],
    [{ HARNESS_BRIDGE_PROXY_TIMEOUT_MS: ' 500' }, 'HARNESS_BRIDGE_PROXY_TIMEOUT_MS'],
    [{ HARNESS_UI_PORT: '65536' }, 'HARNESS_UI_PORT'],
    [{ HARNESS_UI_PORT: '-1' }, 'HARNESS_UI_PORT'],
    [{ HARNESS_UI_HOST: '0.0.0.0' }, 'HARNESS_UI_HOST'],
    [{ HARNESS_UI_HOST: '192.168.1.2' }, 'HARNESS_UI_HOST'],
    [{ HARNESS_UI_HOST: 'example.com' }, 'HARNESS_UI_HOST'],
    [{ HARNESS_BRIDGE_URL: 'http://10.0.0.5:8787' }, 'HARNESS_BRIDGE_URL'],
    [{ HARNESS_BRIDGE_URL: 'https://127.0.0.1:8787' }, 'HARNESS_BRIDGE_URL'],
    [{ HARNESS_BRIDGE_ACCESS_TOKEN: '' }, 'HARNESS_BRIDGE_ACCESS_TOKEN'],
  ];
  for (const [patch, name] of cases) {
    t.throws(() => loadUiConfig({ ...GOOD, ...patch }), new UsageError(''), JSON.stringify(patch));
    t.throws(() => loadUiConfig({ ...GOOD, ...patch }), { message: new RegExp(name) }, name);
  }
});

t.test('loopback means 127.0.0.0/8, ::1 and localhost only', async (t) => {
  for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST'])
    t.ok(isLoopbackHost(h), h);
  for (const h of [
    '0.0.0.0',
    '::',
    '128.0.0.1',
    'localhost.evil.example',
    '::ffff:127.0.0.1x',
    '',
    '127.0.0.256',
    '127.300.0.1',
    '127.1',
    '0127.0.0.1',
    '127.000.0.1',
  ]) {
    t.notOk(isLoopbackHost(h), h);
  }
});

t.test('every code the UI server answers is documented in docs/ui.md', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs/ui.md'), 'utf8');
  const section = doc
    .slice(doc.indexOf('## Errors the UI server answers itself'), doc.indexOf('## The web app'))
    .replace(/\s+/g, ' ');
  // The proxy's own codes: a table row with the status and the registry's sentence, as
  // test/build/generated-docs.test.ts checks the bridge's codes against docs/api.md.
  for (const [code, { status, doc: meaning }] of Object.entries(UI_ERROR_CODES)) {
    t.ok(doc.includes(`| ${status} | \`${code}\` | ${meaning} |`), `${code} row`);
  }
  // The bridge codes it reuses: named with their status, which is the bridge registry's.
  for (const [code, status] of Object.entries(UI_SHARED_CODES)) {
    t.equal(
      status,
      ERROR_CODES[code as keyof typeof ERROR_CODES].status,
      `${code} keeps its registry status`,
    );
    t.ok(section.includes(`\`${code}\` (${status})`), `${code} is named with its status`);
  }
});

/** A loopback port held by a plain server until the test ends. */
async function takenPort(t: Test): Promise<string> {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => taken.close(() => resolve())));
  return String((taken.address() as AddressInfo).port);
}

t.test('`harness ui` refuses before listening, with one line naming the variable', async (t) => {
  // main.ts turns a UsageError into exit 2 with `harness: <message>`. Should a refusal be lost, the
  // command would go on to listen, and on a free port it would serve until the file timed out: the
  // port is taken, so it fails at once with the bind refusal instead of the one expected here.
  const saved = { ...process.env };
  t.teardown(() => {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  });
  Object.assign(process.env, GOOD, {
    HARNESS_HUMAN_APPROVAL_TOKEN: 'h'.repeat(40),
    HARNESS_UI_PORT: await takenPort(t),
  });
  const program = new Command('harness').exitOverride();
  registerUi(program);
  await t.rejects(program.parseAsync(['ui'], { from: 'user' }), {
    name: 'UsageError',
    message: 'harness ui refuses to start: HARNESS_HUMAN_APPROVAL_TOKEN must not be in its environment',
  });
  delete process.env['HARNESS_HUMAN_APPROVAL_TOKEN'];
  process.env['HARNESS_BRIDGE_PROXY_TIMEOUT_MS'] = '50';
  await t.rejects(program.parseAsync(['ui'], { from: 'user' }), {
    name: 'UsageError',
    message: /^HARNESS_BRIDGE_PROXY_TIMEOUT_MS/,
  });
});

t.test('`harness ui` on a port already in use: exit 2, one line naming HARNESS_UI_PORT', async (t) => {
  const port = await takenPort(t);
  const child = spawn(process.execPath, [CLI, 'ui'], {
    env: { PATH: process.env['PATH'] ?? '', ...GOOD, HARNESS_UI_PORT: port },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { code, stderr } = await exitOf(child);
  t.equal(code, 2, stderr);
  const lines = stderr.trimEnd().split('\n');
  t.equal(lines.length, 1, stderr);
  t.ok(lines[0]!.includes('HARNESS_UI_PORT') && lines[0]!.includes(port), stderr);
  t.notOk(stderr.includes(GOOD.HARNESS_BRIDGE_ACCESS_TOKEN), 'no credential echoed');
});
