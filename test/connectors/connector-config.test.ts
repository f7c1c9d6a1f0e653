import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { accessToken, type ConnectorConfigError, parseConnectorConfig } from '../../src/connectors/config.js';
import { freshEventId, runFileStem } from '../../src/connectors/names.js';
import { isOutboxFileName } from '../../src/connectors/outbox.js';
import { runIdFor } from '../../src/connectors/session.js';
import { RUN_ID_PATTERN } from '../../src/contract/limits.js';

/** connector.json is checked by hand (no schema compiler in a hook's start): every problem at once. */
const parse = (o: unknown) => parseConnectorConfig(JSON.stringify(o), '/p/.harness/connector.json', '/p');
const problems = (o: unknown) => raw(JSON.stringify(o));
function raw(text: string): string[] {
  try {
    parseConnectorConfig(text, 'f', '/p');
    return [];
  } catch (err) {
    return (err as ConnectorConfigError).problems;
  }
}

t.test('defaults, and relative paths resolved against the project', async (t) => {
  const c = parse({
    schema: 'harness.connector.v1',
    adapterPath: 'pack/project-adapter.json',
    tokenFile: '/h/agent.env',
  });
  t.match(c, {
    runId: '{runtime}-{session}',
    artifactRoot: '/p',
    adapterPath: '/p/pack/project-adapter.json',
    tokenFile: '/h/agent.env',
    stopGate: false,
    deadlineMs: 2000,
    redZone: [],
  });
});

t.test('a tokenFile holding more than the access token is refused, whatever more it holds', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'token-file-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'agent.env');
  const config = parse({ schema: 'harness.connector.v1', tokenFile: file });
  await writeFile(file, 'HARNESS_BRIDGE_ACCESS_TOKEN=a-token\n');
  t.equal(await accessToken(config, {}), 'a-token', 'agent.env: the access token');
  for (const name of [
    'HARNESS_BRIDGE_INTEGRITY_KEY',
    'HARNESS_BRIDGE_EXPORT_KEY',
    'HARNESS_HUMAN_APPROVAL_TOKEN',
  ]) {
    await writeFile(file, `HARNESS_BRIDGE_ACCESS_TOKEN=a-token\n${name}=x\n`);
    await t.rejects(accessToken(config, {}), /holds more than the access token/, name);
  }
});

t.test('every problem is listed, unknown fields included', async (t) => {
  t.same(
    problems({
      schema: 'harness.connector.v2',
      extra: 1,
      runId: 'x-{user}',
      stopGate: 'yes',
      deadlineMs: 5,
      redZone: [
        { command: '(', approvalOwner: 'o', approvalScope: 's' },
        { command: 'a', path: 'b', approvalOwner: '', approvalScope: 's', waitSeconds: 600 },
        { tool: 'x', approvalOwner: 'o', approvalScope: 's', why: 1 },
      ],
    }),
    [
      'unknown field extra',
      'schema must be "harness.connector.v1"',
      'runId: unknown placeholder {user}',
      'stopGate must be true or false',
      'deadlineMs must be an integer from 100 to 30000',
      'redZone[0].command is not a valid regular expression',
      'redZone[1] needs exactly one of command, path or tool',
      'redZone[1].approvalOwner must be a non-empty string',
      'redZone[1].waitSeconds must be an integer from 0 to 540',
      'redZone[2]: unknown field why',
    ],
  );
  t.same(problems('[]'), ['must be a JSON object']);
  t.same(raw('{'), ['not valid JSON']);
});

t.test('a session always maps to the same canonical run ID', async (t) => {
  const env = {};
  t.equal(await runIdFor('{runtime}-{session}', 'codex', '0199a2c4-7e1f', env), 'codex-0199a2c4-7e1f');
  t.equal(
    await runIdFor('{runtime}-{session}', 'gemini', 'a b/c', env),
    'gemini-a-b-c',
    'outside the pattern becomes -',
  );
  const long = await runIdFor('{runtime}-{session}', 'claude-code', 'x'.repeat(300), env);
  t.ok(RUN_ID_PATTERN.test(long), 'a session too long for the pattern gets its digest');
  t.equal(
    long,
    await runIdFor('{runtime}-{session}', 'claude-code', 'x'.repeat(300), env),
    'the same one every time',
  );
  t.not(
    long,
    await runIdFor('{runtime}-{session}', 'claude-code', `${'x'.repeat(299)}y`, env),
    "never another session's",
  );
  t.equal(
    await runIdFor('{runtime}-{session}', 'codex', 's', { HARNESS_RUN_ID: 'release-42' }),
    'release-42',
  );
});

t.test('run file names: one per run ID, also on a case-insensitive file system', async (t) => {
  t.equal(runFileStem('claude-code-s1'), 'claude-code-s1', 'a lower-case ID is its own name');
  const ids = ['Ab', 'aB', 'AB', 'ab', 'a.b', `${'Z'.repeat(128)}`, `${'z'.repeat(127)}Z`];
  const names = ids.map(runFileStem);
  t.equal(new Set(names.map((n) => n.toLowerCase())).size, ids.length, 'no two IDs fold to one name');
  for (const n of names) t.ok(n.length <= 161 && !n.includes('/'), n);
  t.equal(runFileStem('aB'), 'ab+2');
});

t.test('fresh event IDs are 128 random bits after the runtime name', async (t) => {
  const a = await freshEventId('codex');
  t.match(a, /^codex-[0-9a-f]{32}$/);
  t.not(a, await freshEventId('codex'));
});

t.test('every run file name is one the outbox flush and doctor look for', async (t) => {
  for (const id of ['claude-code-s1', 'Codex-0199A', `${'Q'.repeat(128)}`, 'a.b_c'])
    t.ok(isOutboxFileName(`run-${runFileStem(id)}.jsonl`), id);
  for (const name of ['run-.jsonl', 'run-a.jsonl.1234.tmp', 'run-a.jsonl.lock', 'x.jsonl', 'run-A.jsonl'])
    t.notOk(isOutboxFileName(name), name);
});
