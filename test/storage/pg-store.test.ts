import pg from 'pg';
import t, { type Test } from 'tap';
import {
  cleanup,
  ev,
  makeTestEnv as makeEnv,
  startTestBridge,
  type TestBridge,
  type TestEnv,
} from '../helpers/bridge.js';
import { clusterOrSkip } from '../helpers/pg-store.js';
import { spawnBridge } from '../helpers/spawned-bridge.js';

/**
 * Issue 32 item 3: the PostgreSQL store trusts the database no more than the file store trusts the
 * disk. A record row changed, deleted or reordered through SQL, or a run's sealed head moved,
 * quarantines the run with the reason, when it is opened (after a restart) or read (while it is
 * open); a quarantining read changes no row.
 */
const cluster = await clusterOrSkip('the PostgreSQL store');
if (cluster !== null) {
  // Each environment a fresh schema of the cluster's database (this file runs inside the storage
  // group's process: nothing global is set).
  const makeTestEnv = () => makeEnv({ database: cluster.url });

  const sql = (te: TestEnv) => {
    const pool = new pg.Pool({ connectionString: te.env['HARNESS_DATABASE_URL']!, max: 1 });
    return {
      query: async (text: string, values: unknown[] = []) => (await pool.query(text, values)).rows,
      end: () => pool.end(),
    };
  };

  /** A run `r` with three events, its bridge stopped; `tamper` then runs SQL on its rows. */
  async function tampered(
    t: Test,
    tamper: (q: (text: string, values?: unknown[]) => Promise<any[]>) => Promise<void>,
  ): Promise<{ b: TestBridge; rows: () => Promise<any[]> }> {
    const te = await makeTestEnv();
    const first = await startTestBridge(te);
    for (let i = 0; i < 3; i++)
      t.equal((await first.req('POST', '/runs/r/events', ev({ message: `m${i}` }))).status, 201);
    await first.close();
    const db = sql(te);
    t.teardown(() => db.end());
    await tamper(db.query);
    const b = await startTestBridge(te);
    t.teardown(() => cleanup(b));
    const rows = () => db.query('SELECT seq, line FROM harness_records ORDER BY seq, line');
    return { b, rows };
  }

  const cases: [string, string, RegExp][] = [
    [
      'a record edited',
      'UPDATE harness_records SET line = replace(line, \'"m1"\', \'"mX"\') WHERE seq = 1',
      /journal record 1 fails authentication/,
    ],
    [
      'a record deleted from the middle',
      'DELETE FROM harness_records WHERE seq = 1',
      /journal record 1 is missing/,
    ],
    [
      'two records swapped',
      `UPDATE harness_records AS a SET line = b.line FROM harness_records AS b
       WHERE a.seq IN (0, 1) AND b.seq = 1 - a.seq`,
      /journal record 0 (fails authentication|is malformed or out of order|was not started under)/,
    ],
    [
      'the newest record deleted',
      'DELETE FROM harness_records WHERE seq = 2',
      /rolled back to record 2 of 3/,
    ],
    [
      'the head moved back with the newest record',
      `DELETE FROM harness_records WHERE seq = 2;
       UPDATE harness_runs SET head_count = 2, head_mac = (SELECT line::json->>'mac' FROM harness_records WHERE seq = 1)`,
      /sealed head fails authentication/,
    ],
    [
      'a record added after the head',
      `INSERT INTO harness_records (run_id, seq, line) SELECT run_id, 3, line FROM harness_records WHERE seq = 2`,
      /journal record 3 (fails authentication|is malformed or out of order)/,
    ],
  ];
  for (const [name, statement, reason] of cases) {
    t.test(`${name}: the run is quarantined with the reason when opened`, async (t) => {
      const { b, rows } = await tampered(t, async (q) => {
        await q(statement);
      });
      const before = await rows();
      const res = await b.req('GET', '/runs/r');
      t.equal(res.status, 200);
      t.equal(res.body['run']?.status, 'quarantined', JSON.stringify(res.body['run']?.quarantine));
      t.match(res.body['run']?.quarantine?.reasons?.join('; '), reason);
      const refused = await b.req('POST', '/runs/r/events', ev());
      t.equal(refused.status, 409);
      t.equal(refused.body['error'], 'run_quarantined');
      t.same(await rows(), before, 'no row changed');
    });
  }

  t.test(
    'a head put back to an earlier one it held (a restored table): records after it quarantine the run',
    async (t) => {
      const te = await makeTestEnv();
      const first = await startTestBridge(te);
      for (let i = 0; i < 2; i++) t.equal((await first.req('POST', '/runs/r/events', ev())).status, 201);
      const db = sql(te);
      t.teardown(() => db.end());
      const [held] = await db.query('SELECT head_count, head_mac, head_seal FROM harness_runs');
      t.equal((await first.req('POST', '/runs/r/events', ev())).status, 201);
      await first.close();
      await db.query('UPDATE harness_runs SET head_count = $1, head_mac = $2, head_seal = $3', [
        held.head_count,
        held.head_mac,
        held.head_seal,
      ]);
      const b = await startTestBridge(te);
      t.teardown(() => cleanup(b));
      const res = await b.req('GET', '/runs/r');
      t.equal(res.body['run']?.status, 'quarantined');
      t.match(res.body['run']?.quarantine?.reasons?.join('; '), /holds 1 records after its sealed head/);
    },
  );

  t.test('a record edited while the run is open is caught by the next read of its page', async (t) => {
    const te = await makeTestEnv();
    const b = await startTestBridge(te);
    t.teardown(() => cleanup(b));
    for (let i = 0; i < 3; i++)
      t.equal((await b.req('POST', '/runs/r/events', ev({ message: `m${i}` }))).status, 201);
    t.equal((await b.req('GET', '/runs/r')).body['run']?.status, 'running');
    const db = sql(te);
    t.teardown(() => db.end());
    await db.query(`UPDATE harness_records SET line = replace(line, '"m0"', '"mY"') WHERE seq = 0`);
    const res = await b.req('GET', '/runs/r');
    t.equal(res.body['run']?.status, 'quarantined');
    t.match(res.body['run']?.quarantine?.reasons?.join('; '), /journal record 0 fails authentication/);
  });

  t.test('runs and their records outlast a restart; the chain carries on', async (t) => {
    const te = await makeTestEnv();
    const first = await startTestBridge(te);
    t.equal((await first.req('POST', '/runs', { id: 'kept', title: 'kept' })).status, 201);
    for (let i = 0; i < 5; i++) t.equal((await first.req('POST', '/runs/kept/events', ev())).status, 201);
    const journal = await first.journal('kept');
    await first.close();
    const b = await startTestBridge(te);
    t.teardown(() => cleanup(b));
    t.same(await b.journal('kept'), journal, 'the records as written');
    const list = await b.req('GET', '/runs');
    t.same(
      list.body['runs'].map((r: { id: string }) => r.id),
      ['kept'],
    );
    const next = await b.req('POST', '/runs/kept/events', ev());
    t.equal(next.status, 201);
    t.equal(next.body['seq'], 5);
    const view = await b.req('GET', '/runs/kept?eventLimit=10');
    t.equal(view.body['run']?.eventCount, 6);
    t.equal(view.body['run']?.status, 'running');
  });

  /** A second bridge on the same database (and keys) as `te`, with a data directory of its own. */
  async function secondBridge(t: Test, te: TestEnv): Promise<TestBridge> {
    const own = await makeTestEnv();
    const env = { ...te.env, HARNESS_DATA_DIR: own.dataDir, HOME: own.dir };
    const b = await startTestBridge({ ...te, dir: own.dir, dataDir: own.dataDir, env });
    t.teardown(() => cleanup(b));
    return b;
  }

  t.test(
    'two bridge processes on one database write one run: each event once, whole, the chain valid',
    async (t) => {
      const te = await makeTestEnv();
      const own = await makeTestEnv();
      const a = await spawnBridge(t, te);
      const b = await spawnBridge(t, {
        ...te,
        env: { ...te.env, HARNESS_DATA_DIR: own.dataDir, HOME: own.dir },
      });
      t.equal((await a.req('POST', '/runs', { id: 'shared' })).status, 201);
      const ids = Array.from(
        { length: 60 },
        (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      );
      const answers = await Promise.all(
        ids.map((id, i) =>
          (i % 2 === 0 ? a : b).req('POST', '/runs/shared/events', ev({ id, message: `e${i}` })),
        ),
      );
      const acknowledged = ids.filter((_, i) => answers[i]!.status === 201);
      t.same(
        answers.map((r) => r.status).filter((s) => s !== 201),
        [],
        'every event acknowledged (the lease waits are short here)',
      );
      const seqs = answers.map((r) => r.body['seq']).sort((x, y) => x - y);
      t.same(
        seqs,
        ids.map((_, i) => i),
        'each acknowledged event has its own position',
      );
      // Each bridge reads the other's events.
      for (const reader of [a, b]) {
        const view = await reader.req('GET', '/runs/shared?eventLimit=100');
        t.equal(view.body['run']?.status, 'running');
        t.equal(view.body['run']?.eventCount, ids.length);
        t.same(
          new Set(view.body['run']?.events.map((e: { id: string }) => e.id)),
          new Set(acknowledged),
          'every acknowledged id once',
        );
      }
      // A third bridge opening the run afresh authenticates the whole chain.
      const c = await secondBridge(t, te);
      const reopened = await c.req('GET', '/runs/shared?eventLimit=1');
      t.equal(reopened.body['run']?.status, 'running', JSON.stringify(reopened.body['run']?.quarantine));
      t.equal(reopened.body['run']?.eventCount, ids.length);
    },
  );

  t.test('a run created through one bridge is listed and read through another', async (t) => {
    const te = await makeTestEnv();
    const a = await startTestBridge(te);
    t.teardown(() => cleanup(a));
    const b = await secondBridge(t, te);
    t.same((await b.req('GET', '/runs')).body['runs'], []);
    t.equal((await a.req('POST', '/runs/made-on-a/events', ev())).status, 201);
    const listed = await b.req('GET', '/runs');
    t.same(
      listed.body['runs'].map((r: { id: string }) => r.id),
      ['made-on-a'],
    );
    t.equal((await b.req('GET', '/runs/made-on-a')).body['run']?.eventCount, 1);
    t.equal((await b.req('POST', '/runs/made-on-a/events', ev())).status, 201);
    t.equal((await a.req('GET', '/runs/made-on-a')).body['run']?.eventCount, 2, 'a sees what b appended');
  });

  t.test(
    'the database away under load: 503 bridge_busy, nothing acknowledged lost, recovery without a restart',
    async (t) => {
      const te = await makeTestEnv();
      const b = await startTestBridge(te);
      t.teardown(() => cleanup(b));
      const id = (i: number) => `00000000-0000-4000-9000-${String(i).padStart(12, '0')}`;
      t.equal((await b.req('POST', '/runs/away/events', ev({ id: id(0) }))).status, 201);
      // A burst of events while the server is stopped under them (fast shutdown cuts connections).
      const burst = Array.from({ length: 30 }, (_, i) =>
        b.req('POST', '/runs/away/events', ev({ id: id(i + 1) })),
      );
      // Stopped once the first of them is answered, so the rest meet it on their way.
      await Promise.race(burst);
      await cluster.stopServer();
      const answers = await Promise.all(burst);
      t.comment(`burst: ${answers.filter((a) => a.status === 201).length} acknowledged before the stop`);
      const statuses = new Set(answers.map((a) => a.status));
      t.ok(
        [...statuses].every((s) => s === 201 || s === 503),
        `only 201 or 503: ${[...statuses]}`,
      );
      for (const a of answers.filter((a) => a.status === 503)) t.equal(a.body['error'], 'bridge_busy');
      const away = await b.req('POST', '/runs/away/events', ev({ id: id(100) }));
      t.equal(away.status, 503, 'a write while the database is away');
      t.equal(away.body['error'], 'bridge_busy');
      t.equal(away.headers.get('retry-after'), '1');
      t.equal((await b.req('GET', '/runs/away')).status, 503, 'a read while the database is away');
      await cluster.startServer();
      // The same bridge serves again: the refused events are retried with their ids.
      let retried = await b.req('POST', '/runs/away/events', ev({ id: id(100) }));
      for (let i = 0; i < 50 && retried.status === 503; i++) {
        await new Promise((r) => setTimeout(r, 100));
        retried = await b.req('POST', '/runs/away/events', ev({ id: id(100) }));
      }
      t.equal(retried.status, 201, JSON.stringify(retried.body));
      for (const [i, a] of answers.entries())
        if (a.status === 503)
          t.equal((await b.req('POST', '/runs/away/events', ev({ id: id(i + 1) }))).status, 201);
      const view = await b.req('GET', '/runs/away?eventLimit=100');
      t.equal(view.body['run']?.status, 'running');
      const stored = view.body['run']?.events.map((e: { id: string }) => e.id) as string[];
      t.equal(stored.length, 32, 'the first event, the 30 of the burst and the one refused while away');
      t.equal(new Set(stored).size, 32, 'each once');
      await b.close();
      const again = await startTestBridge(te);
      t.teardown(() => cleanup(again));
      const reopened = await again.req('GET', '/runs/away?eventLimit=1');
      t.equal(reopened.body['run']?.status, 'running', 'the chain authenticates from scratch');
      t.equal(reopened.body['run']?.eventCount, 32);
    },
  );

  t.test('appends to an open run query nothing that reads or grows with its records', async (t) => {
    const b = await startTestBridge(await makeTestEnv());
    t.teardown(() => cleanup(b));
    const post = async (from: number) => {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) => b.req('POST', '/runs/cc/events', ev({ id: `e${from + i}` }))),
      );
      return answers.every((r) => r.status === 201);
    };
    for (let k = 0; k < 5; k++) t.ok(await post(k * 100), `events ${k * 100} to ${k * 100 + 99}`);
    // Every statement the store sends from now on (the bridge runs in this process).
    const pool = (b.ctx.store as unknown as { opts: { pool: pg.Pool } }).opts.pool;
    const original = pool.query;
    const sent: string[] = [];
    pool.query = function (this: pg.Pool, ...args: unknown[]) {
      const q = args[0] as string | { text: string };
      sent.push(typeof q === 'string' ? q : q.text);
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof pool.query;
    t.teardown(() => {
      pool.query = original;
    });
    for (let k = 5; k < 10; k++) t.ok(await post(k * 100), `events ${k * 100} to ${k * 100 + 99}`);
    t.ok(sent.length > 0 && sent.length <= 500, `${sent.length} statements for 500 events (one per batch)`);
    t.same(
      // (The run's write lease may be renewed on a slow machine: that statement reads no run.)
      sent.filter((q) => !/^WITH ins AS \(\s*INSERT INTO harness_records|harness_run_leases/.test(q)),
      [],
      'every statement is a batch commit: nothing reads the run',
    );
    // The probe sees a read where there is one: a page of the run's events.
    t.equal((await b.req('GET', '/runs/cc?eventLimit=5')).status, 200);
    t.ok(
      sent.some((q) => /FROM harness_records/.test(q)),
      'a read of the run reads its records, and the probe sees it',
    );
  });

  t.test('a batch one run of which clashes with another writer fails that run alone', async (t) => {
    const te = await makeTestEnv();
    const b = await startTestBridge(te);
    t.teardown(() => cleanup(b));
    for (const run of ['clash', 'other', 'first'])
      t.equal((await b.req('POST', `/runs/${run}/events`, ev({ id: `${run}-0` }))).status, 201);
    // Another writer (a bridge whose lease on the run had lapsed) committed record 1 of `clash`.
    const db = sql(te);
    t.teardown(() => db.end());
    await db.query(`INSERT INTO harness_records (run_id, seq, line) VALUES ('clash', 1, '{}')`);
    // Hold one batch in flight, so the posts to `clash` and `other` queue behind it and share the next.
    const pool = (b.ctx.store as unknown as { opts: { pool: pg.Pool } }).opts.pool;
    const original = pool.query;
    let release!: () => void;
    const held = new Promise<void>((done) => (release = done));
    let batches = 0;
    pool.query = async function (this: pg.Pool, ...args: unknown[]) {
      const q = args[0] as string | { text: string };
      const text = typeof q === 'string' ? q : q.text;
      if (text.startsWith('WITH ins AS') && batches++ === 0) await held;
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof pool.query;
    t.teardown(() => {
      pool.query = original;
    });
    const first = b.req('POST', '/runs/first/events', ev({ id: 'first-1' }));
    while (batches === 0) await new Promise((r) => setTimeout(r, 5));
    const clash = b.req('POST', '/runs/clash/events', ev({ id: 'clash-1' }));
    const other = b.req('POST', '/runs/other/events', ev({ id: 'other-1' }));
    await new Promise((r) => setTimeout(r, 100));
    release();
    t.equal((await first).status, 201);
    t.equal((await other).status, 201, 'the run that clashed with nothing is stored');
    const refused = await clash;
    t.equal(refused.status, 503, 'the clashing run is refused');
    t.equal(refused.body['error'], 'bridge_busy');
    t.ok(batches >= 3, `the shared batch failed and was committed run by run (${batches} batch statements)`);
    t.same(
      (await db.query(`SELECT run_id, seq FROM harness_records WHERE seq = 1 ORDER BY run_id`)).map(
        (r) => `${r.run_id}:${r.seq}`,
      ),
      ['clash:1', 'first:1', 'other:1'],
    );
    t.same(
      (await db.query(`SELECT line FROM harness_records WHERE run_id = 'clash' AND seq = 1`))[0].line,
      '{}',
      "the other writer's row is untouched",
    );
  });
}
