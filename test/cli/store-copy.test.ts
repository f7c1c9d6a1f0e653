import { cp, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import t from 'tap';
import { appendDriftQuarantines, readDriftQuarantines } from '../../src/storage/drift-quarantines.js';
import { runPaths } from '../../src/storage/paths.js';
import { parseConfig } from '../../src/storage/run-files.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestEnv } from '../helpers/bridge.js';
import { runCli } from '../helpers/cli.js';
import { clusterOrSkip } from '../helpers/pg-store.js';

/**
 * `harness store copy` (issue 32 item 6): runs go from a data directory into PostgreSQL and from
 * there into a fresh data directory, each copy authenticated on both sides and compared byte for
 * byte, so that a bridge started on either target serves the same event pages; a repeated copy
 * writes nothing; a tampered source run and a target holding another head are refused and
 * reported, the other runs copied; the database password is never printed.
 */
const cluster = await clusterOrSkip('harness store copy');
if (cluster !== null) {
  /** The source: a closed file-store bridge's data directory with r1 (3 events) and r2 (2). */
  const source: TestEnv = await makeTestEnv();
  delete source.env['HARNESS_DATABASE_URL'];
  const b = await startTestBridge(source);
  for (const [run, n] of [
    ['r1', 3],
    ['r2', 2],
  ] as const)
    for (let i = 0; i < n; i++)
      if ((await b.req('POST', `/runs/${run}/events`, ev({ message: `${run} m${i}` }))).status !== 201)
        throw new Error('the source run was not written');
  await b.close();
  t.teardown(() => cleanup(b));

  const env = {
    PATH: process.env['PATH'] ?? '',
    HARNESS_BRIDGE_INTEGRITY_KEY: source.env['HARNESS_BRIDGE_INTEGRITY_KEY']!,
    HARNESS_REVIEW_TRUST_SHA256: source.env['HARNESS_REVIEW_TRUST_SHA256']!,
  };
  /** The URL side goes in a variable (`env:NAME`): a URL with its password is refused as an argument. */
  const copy = async (from: string, to: string, ...more: string[]) => {
    const urls: Record<string, string> = {};
    const named = (name: string, value: string) => {
      if (!/^postgres/.test(value)) return value;
      urls[name] = value;
      return `env:${name}`;
    };
    const args = ['--from', named('COPY_FROM', from), '--to', named('COPY_TO', to), ...more];
    const r = await runCli(['store', 'copy', ...args], { ...env, ...urls });
    t.notOk(`${r.stdout}${r.stderr}`.includes(cluster.password), 'the password is never printed');
    return r;
  };
  /** A fresh schema of the cluster's database, as the bridge's URL. */
  const freshUrl = async () => (await makeTestEnv({ database: cluster.url })).env['HARNESS_DATABASE_URL']!;
  const sql = async (url: string, text: string, values: unknown[] = []) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(text, values)).rows;
    } finally {
      await client.end();
    }
  };
  const rowsOf = (url: string) =>
    sql(
      url,
      `SELECT 'run' AS k, run_id, config || head_count || head_mac || head_seal AS v FROM harness_runs
       UNION ALL SELECT 'record', run_id, seq || line FROM harness_records ORDER BY 1, 2, 3`,
    );
  const tree = async (dir: string) => {
    const out: Record<string, string> = {};
    for (const e of await readdir(dir, { recursive: true, withFileTypes: true }))
      if (e.isFile())
        out[join(e.parentPath, e.name).slice(dir.length)] = (
          await readFile(join(e.parentPath, e.name))
        ).toString();
    return out;
  };
  /** What a bridge on `te` serves of each run: its summary's status and its event page. */
  const served = async (te: TestEnv) => {
    const bridge = await startTestBridge(te);
    try {
      const out: Record<string, unknown> = {};
      for (const run of ['r1', 'r2']) {
        const page = await bridge.req('GET', `/runs/${run}`);
        out[run] = { status: page.status, body: page.body };
      }
      return out;
    } finally {
      await bridge.close();
    }
  };
  const withStore = (over: Record<string, string>): TestEnv => ({
    ...source,
    env: { ...source.env, ...over },
  });
  const fileEnv = (dataDir: string) => {
    const te = withStore({ HARNESS_DATA_DIR: dataDir });
    te.dataDir = dataDir;
    return te;
  };

  t.test('file -> PostgreSQL -> a fresh data directory, and again: nothing written', async (t) => {
    const url = await freshUrl();
    const intoPg = await copy(source.dataDir, url);
    t.equal(intoPg.exitCode, 0, intoPg.stdout + intoPg.stderr);
    t.match(intoPg.stdout, /^copied r1 \(3 events\)$/m);
    t.match(intoPg.stdout, /^copied r2 \(2 events\)$/m);
    t.match(
      intoPg.stdout,
      /^2 copied, 0 already there, 0 refused, from .* to postgresql:\/\/harness:\*\*\*@/m,
    );
    const expected = await served(fileEnv(source.dataDir));
    t.equal((expected['r1'] as { status: number }).status, 200);
    t.same(
      await served(withStore({ HARNESS_DATABASE_URL: url })),
      expected,
      'the database serves the same pages',
    );

    const rows = await rowsOf(url);
    const again = await copy(source.dataDir, url);
    t.equal(again.exitCode, 0, again.stderr);
    t.match(again.stdout, /^already there r1 \(3 events\)$/m);
    t.match(again.stdout, /^0 copied, 2 already there, 0 refused, .*: nothing written$/m);
    t.same(await rowsOf(url), rows, 'the second copy changed no row');

    const dir = join(source.dir, 'from-pg');
    const intoDir = await copy(url, dir, '--json');
    t.equal(intoDir.exitCode, 0, intoDir.stderr);
    const report = JSON.parse(intoDir.stdout);
    t.same([report.copied, report.alreadyThere, report.refused], [2, 0, 0]);
    t.notOk(report.from.includes(cluster.password));
    for (const run of ['r1', 'r2']) {
      t.same(
        await readFile(runPaths(dir, run).journal),
        await readFile(runPaths(source.dataDir, run).journal),
        `${run}: events.jsonl byte for byte the source's`,
      );
    }
    const files = await tree(dir);
    const dirBridge = await served(fileEnv(dir));
    t.same(dirBridge, expected, 'a bridge on the copied directory serves the same pages');
    // What that bridge wrote at its start (its index, snapshots) is not the copy's: compare the runs' own files.
    const mine = (f: Record<string, string>) =>
      Object.fromEntries(Object.entries(f).filter(([p]) => /run-config\.json$|events\.jsonl$/.test(p)));
    const twice = await copy(url, dir);
    t.equal(twice.exitCode, 0, twice.stderr);
    t.match(twice.stdout, /^0 copied, 2 already there, 0 refused, .*: nothing written$/m);
    t.same(mine(await tree(dir)), mine(files), 'the second copy changed no run file');
  });

  t.test('a tampered source run is refused, named, and nothing of it written', async (t) => {
    const dir = join(source.dir, 'tampered');
    await cp(source.dataDir, dir, { recursive: true });
    const journal = runPaths(dir, 'r2').journal;
    await writeFile(journal, (await readFile(journal, 'utf8')).replace('r2 m1', 'r2 mX'));
    const url = await freshUrl();
    const r = await copy(dir, url);
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stdout, /^refused r2: TAMPERED r2: events\.jsonl: journal record 1 fails authentication$/m);
    t.match(r.stdout, /^copied r1 \(3 events\)$/m);
    t.match(r.stdout, /^1 copied, 0 already there, 1 refused/m);
    t.same(await sql(url, 'SELECT run_id FROM harness_records WHERE run_id = $1', ['r2']), []);
    t.same(await sql(url, 'SELECT run_id FROM harness_runs ORDER BY run_id'), [{ run_id: 'r1' }]);
  });

  t.test('a record changed through SQL is refused on a database source, the other runs copied', async (t) => {
    const url = await freshUrl();
    t.equal((await copy(source.dataDir, url)).exitCode, 0);
    await sql(url, `UPDATE harness_records SET line = replace(line, 'r1 m1', 'r1 mX') WHERE run_id = 'r1'`);
    const dir = join(source.dir, 'from-tampered-pg');
    const r = await copy(url, dir);
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stdout, /^refused r1: the source's copy: records: journal record 1 fails authentication$/m);
    t.match(r.stdout, /^copied r2 \(2 events\)$/m);
    t.same(
      (await readdir(dir)).filter((n) => n.startsWith('run-')),
      [runPaths(dir, 'r2').dir.slice(dir.length + 1)],
      'only r2 was written',
    );
  });

  t.test('a target holding another head is refused, never overwritten', async (t) => {
    const url = await freshUrl();
    t.equal((await copy(source.dataDir, url)).exitCode, 0);
    const moved = await startTestBridge(withStore({ HARNESS_DATABASE_URL: url }));
    t.equal((await moved.req('POST', '/runs/r1/events', ev({ message: 'later' }))).status, 201);
    await moved.close();
    const rows = await rowsOf(url);
    const intoPg = await copy(source.dataDir, url);
    t.equal(intoPg.exitCode, 1);
    t.match(
      intoPg.stdout,
      /^refused r1: the target holds it differently: another head \(4 records, not 3\)$/m,
    );
    t.match(intoPg.stdout, /^already there r2/m);
    t.same(await rowsOf(url), rows, 'no row changed');

    const dir = join(source.dir, 'behind');
    await cp(source.dataDir, dir, { recursive: true });
    const files = await tree(dir);
    const intoDir = await copy(url, dir);
    t.equal(intoDir.exitCode, 1);
    t.match(
      intoDir.stdout,
      /^refused r1: the target holds it differently: another head \(3 records, not 4\)$/m,
    );
    t.same(await tree(dir), files, 'no file changed');
  });

  t.test('a URL argument without its password, the password in PGPASSWORD', async (t) => {
    const url = (await freshUrl()).replace(/:[^:@/]*@/, '@');
    t.notOk(url.includes(cluster.password));
    const r = await runCli(['store', 'copy', '--from', source.dataDir, '--to', url], {
      ...env,
      PGPASSWORD: cluster.password,
    });
    t.equal(r.exitCode, 0, r.stderr);
    t.match(r.stdout, /^2 copied, 0 already there, 0 refused/m);
  });

  t.test('refusals: exit 2, one line, nothing written', async (t) => {
    const dir = join(source.dir, 'never');
    const withUrl = { ...env, U: cluster.url };
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['--from', source.dataDir, '--to', dir], env, /one of --from and --to must be a data directory/],
      [['--from', 'env:U', '--to', 'env:U'], withUrl, /one of --from and --to/],
      [['--from', 'env:U', '--to', dir, '--run', '../x'], withUrl, /is not canonical/],
      [
        ['--from', 'env:U', '--to', dir],
        { PATH: env.PATH, U: cluster.url },
        /HARNESS_BRIDGE_INTEGRITY_KEY is not set/,
      ],
      [
        ['--from', 'env:U', '--to', dir],
        { ...env, U: cluster.urlWith({ database: 'nowhere' }) },
        /^harness: --from: cannot connect to PostgreSQL .*the database does not exist/,
      ],
      [
        ['--from', 'env:U', '--to', dir],
        { ...env, U: cluster.urlWith({ password: 'not-the-password-7x' }) },
        /password authentication failed/,
      ],
      // A password among the arguments is readable by every local user (ps): refused before use.
      [
        ['--from', cluster.url, '--to', dir],
        env,
        /^harness: --from holds a password, which every local user can read/,
      ],
      [
        [
          '--from',
          source.dataDir,
          '--to',
          `${cluster.url.replace(/:[^:@/]*@/, '@')}&password=${cluster.password}`,
        ],
        env,
        /^harness: --to holds a password/,
      ],
      [['--from', 'env:NOT_SET', '--to', dir], env, /^harness: --from names NOT_SET, which is not set/],
      [
        ['--from', 'env:U', '--to', dir],
        { ...env, U: dir },
        /^harness: --from names U, which does not hold a postgres:\/\/ URL/,
      ],
      [['--from', 'env:1U', '--to', dir], withUrl, /^harness: --from: env:1U is not a variable name/],
    ];
    for (const [args, e, why] of cases) {
      const r = await runCli(['store', 'copy', ...args], e);
      t.equal(r.exitCode, 2, r.stderr);
      t.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
      t.match(r.stderr, why);
      t.equal(r.stdout, '');
      t.notOk(r.stderr.includes(cluster.password) || r.stderr.includes('not-the-password-7x'));
    }
    t.same(await readdir(source.dir).then((d) => d.includes('never')), false, 'no target directory made');
  });

  t.test('a data directory a bridge holds is refused as a target', async (t) => {
    const url = await freshUrl();
    t.equal((await copy(source.dataDir, url)).exitCode, 0);
    const dir = join(source.dir, 'busy');
    const busy = await startTestBridge(fileEnv(dir));
    try {
      const files = await tree(dir);
      const r = await copy(url, dir);
      t.equal(r.exitCode, 2, r.stdout);
      t.match(r.stderr, /already leased by another bridge process/);
      t.same(await tree(dir), files, 'nothing written');
    } finally {
      await busy.close();
    }
  });

  t.test('a drift quarantine recorded on the source is recorded on each target', async (t) => {
    const dir = join(source.dir, 'drifted');
    await cp(source.dataDir, dir, { recursive: true });
    const key = Buffer.from(env.HARNESS_BRIDGE_INTEGRITY_KEY);
    const { createdAt } = parseConfig(await readFile(runPaths(dir, 'r2').config, 'utf8'), key);
    await appendDriftQuarantines(dir, [{ runId: 'r2', createdAt, reason: 'an artifact changed' }]);
    const url = await freshUrl();
    const intoPg = await copy(dir, url);
    t.equal(intoPg.exitCode, 0, intoPg.stdout);
    t.match(intoPg.stdout, /^copied r2 \(2 events, 1 drift quarantine recorded\)$/m);
    t.same(await sql(url, 'SELECT run_id, reason, kind FROM harness_quarantines'), [
      { run_id: 'r2', reason: 'an artifact changed', kind: 'drift' },
    ]);
    const back = join(source.dir, 'drifted-back');
    const intoDir = await copy(url, back);
    t.equal(intoDir.exitCode, 0, intoDir.stdout);
    t.same(await readDriftQuarantines(back), [{ runId: 'r2', createdAt, reason: 'an artifact changed' }]);
    const again = await copy(url, back);
    t.match(again.stdout, /^already there r2 \(2 events\)$/m, 'recorded once');
    t.equal((await readDriftQuarantines(back)).length, 1);
    const r2 = JSON.stringify((await served(fileEnv(back)))['r2']);
    t.match(r2, /quarantine.*an artifact changed/, 'a bridge on the copy keeps r2 quarantined');
    t.notMatch(JSON.stringify((await served(fileEnv(source.dataDir)))['r2']), /an artifact changed/);
  });
}
