import { statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { outboxFile } from '../../src/connectors/outbox.js';
import { cleanup, makeTestEnv, startTestBridge } from '../helpers/bridge.js';
import { connect, FILES, harness, parsed, read, type Sandbox, sandbox } from '../helpers/connect.js';
import { spawnBridge } from '../helpers/spawned-bridge.js';

/**
 * `harness doctor` checks the agent side of a set-up, one line a check: a healthy one exits 0; a
 * stopped bridge, a refused token, a broken hook entry, an invalid connector.json, a missing artifact
 * root and events waiting in the outbox each make a FAIL line and exit 1. A bridge running as the
 * user running doctor (the agent's user) is a WARN line, which does not fail; one running as
 * another user is ok. It refuses (exit 2) with the human token or the integrity key in its
 * environment. Needs `npm run build`.
 */

/** Whether a user other than the owner may run `path`: it and every directory above it grant o+x. */
function othersCanRun(path: string): boolean {
  for (let p = path; ; p = dirname(p)) {
    if ((statSync(p).mode & 0o001) === 0) return false;
    if (p === dirname(p)) return true;
  }
}

t.test('harness doctor', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;

  /** A project connected to claude-code and gemini, the bridge's URL and token in the environment. */
  async function healthy(t: Test): Promise<Sandbox> {
    const s = await sandbox(t, 'claude-code');
    s.env['HARNESS_BRIDGE_URL'] = b.url;
    s.env['HARNESS_BRIDGE_ACCESS_TOKEN'] = token;
    for (const runtime of ['claude-code', 'gemini'])
      t.equal((await connect(s, runtime, 'project')).code, 0, `${runtime} connected`);
    return s;
  }
  const doctor = (s: Sandbox) => harness(['doctor', '--project', s.project], s.env, s.project);
  const fails = (stdout: string) => stdout.split('\n').filter((l) => l.startsWith('FAIL '));

  t.test('a healthy one-user set-up: no check fails, exit 0', async (t) => {
    const s = await healthy(t);
    const r = await doctor(s);
    t.equal(r.code, 0, r.stdout + r.stderr);
    t.same(fails(r.stdout), []);
    t.match(r.stdout, /^ok {3}access token accepted$/m);
    t.match(r.stdout, /^ok {3}Claude Code \(project: .*\): hooks and MCP server intact$/m);
    t.match(r.stdout, /^ok {3}Gemini CLI \(project: .*\): hooks and MCP server intact$/m);
    t.match(r.stdout, /^ok {3}Codex CLI: not installed$/m, 'not installed is no failure');
    t.match(r.stdout, /^ok {3}outbox: empty$/m);
    // This test's bridge runs in this process, as this user: separation is not there.
    t.match(
      r.stdout,
      new RegExp(
        `^WARN bridge runs as this user \\(uid ${process.getuid!()}\\): .*docs/operations\\.md\\)$`,
        'm',
      ),
    );
  });

  t.test(
    'a bridge of another user: ok',
    {
      skip:
        process.getuid!() !== 0
          ? 'starting a bridge as another user needs root'
          : !othersCanRun(process.execPath) &&
            `another user cannot run ${process.execPath} (npm run test:node keeps its Node under root's home)`,
    },
    async (t) => {
      const other = await makeTestEnv();
      t.teardown(() => rm(other.dir, { recursive: true, force: true }));
      const nobody = 65534;
      await execa('chown', ['-R', `${nobody}:${nobody}`, other.dir]);
      const { url } = await spawnBridge(t, other, { uid: nobody, gid: nobody });
      const s = await healthy(t);
      s.env['HARNESS_BRIDGE_URL'] = url;
      s.env['HARNESS_BRIDGE_ACCESS_TOKEN'] = other.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
      const r = await doctor(s);
      t.equal(r.code, 0, r.stdout + r.stderr);
      t.match(r.stdout, /^ok {3}bridge runs as another user \(uid 65534\)$/m);
      t.notMatch(r.stdout, /^WARN /m);
    },
  );

  // [what breaks, how, the check that fails]
  const broken: [string, (s: Sandbox) => Promise<void>, RegExp][] = [
    [
      'a stopped bridge',
      async (s) => {
        // Port 2: nothing listens there (fetch refuses port 9 as a bad port before connecting).
        s.env['HARNESS_BRIDGE_URL'] = 'http://127.0.0.1:2';
      },
      /^FAIL bridge at /,
    ],
    [
      'a wrong token',
      async (s) => {
        s.env['HARNESS_BRIDGE_ACCESS_TOKEN'] = 'nope';
      },
      /^FAIL access token refused/,
    ],
    ['no token', async (s) => void delete s.env['HARNESS_BRIDGE_ACCESS_TOKEN'], /^FAIL access token: none/],
    [
      'a token no HTTP header can carry',
      async (s) => {
        s.env['HARNESS_BRIDGE_ACCESS_TOKEN'] = 'tok\nen';
      },
      /^FAIL access token: the access token holds a character an HTTP header cannot carry: use the token/,
    ],
    [
      'a hook entry taken out',
      async (s) => {
        const file = FILES['claude-code'].project.hooks;
        const v = parsed(file, await read(s, file));
        delete v['hooks']['PostToolUse'];
        await writeFile(join(s.root, file), JSON.stringify(v));
      },
      /^FAIL Claude Code \(project: .*\): PostToolUse hook missing: run `harness connect claude-code --project /,
    ],
    [
      'the MCP server taken out',
      async (s) => writeFile(join(s.project, '.mcp.json'), '{}'),
      /^FAIL Claude Code \(project: .*\): MCP server missing/,
    ],
    [
      'an invalid connector.json',
      async (s) =>
        writeFile(
          join(s.project, '.harness', 'connector.json'),
          '{"schema": "harness.connector.v1", "bogus": 1}',
        ),
      /^FAIL connector\.json .*unknown field bogus/,
    ],
    [
      'a missing artifact root',
      async (s) =>
        writeFile(
          join(s.project, '.harness', 'connector.json'),
          '{"schema": "harness.connector.v1", "artifactRoot": "gone"}',
        ),
      /^FAIL artifact root .*gone: missing/,
    ],
    [
      'events waiting in the outbox',
      async (s) => {
        const file = outboxFile(s.home, 'claude-code-s1');
        await mkdir(join(file, '..'), { recursive: true });
        await writeFile(file, `${JSON.stringify({ runId: 'claude-code-s1', event: { id: 'e1' } })}\n`);
      },
      /^FAIL outbox .*: 1 event \(\d+ bytes\) waiting: start the bridge, then `harness outbox flush`$/,
    ],
  ];
  for (const [what, breakIt, check] of broken)
    t.test(`${what}: one FAIL, exit 1`, async (t) => {
      const s = await healthy(t);
      await breakIt(s);
      const r = await doctor(s);
      t.equal(r.code, 1, r.stdout + r.stderr);
      const failed = fails(r.stdout);
      t.ok(
        failed.some((l) => check.test(l)),
        `${check}\n${r.stdout}`,
      );
      // A stopped bridge cannot tell the token: that is one failure, not two.
      t.equal(failed.length, 1, failed.join('\n'));
    });

  t.test('refuses with the human token or the integrity key in its environment', async (t) => {
    const s = await healthy(t);
    for (const name of ['HARNESS_HUMAN_APPROVAL_TOKEN', 'HARNESS_BRIDGE_INTEGRITY_KEY']) {
      const r = await harness(
        ['doctor', '--project', s.project],
        { ...s.env, [name]: b.t.env[name]! },
        s.project,
      );
      t.equal(r.code, 2, name);
      t.equal(r.stdout, '', 'no check ran');
    }
  });
});
