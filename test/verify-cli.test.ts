import { execFile } from 'node:child_process';
import {
  appendFile,
  copyFile,
  cp,
  readdir,
  readFile,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { progressLine } from '../src/cli/progress.js';
import { verdictLine } from '../src/cli/verify.js';
import type { RunCheck } from '../src/cli/verify-run.js';
import { runPaths } from '../src/storage/paths.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestBridge } from './helpers/bridge.js';
import { complete, driveToReady } from './helpers/complete-run.js';

/**
 * `harness verify` through the built CLI: an intact data directory passes; one flipped byte in
 * each of the three run files, a changed artifact, or a missing key fails with its exit code;
 * and verify never writes (not even the torn tail the bridge would cut).
 */
const cli = resolve('dist/src/cli/main.cjs');
const run = promisify(execFile);

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function verify(env: Record<string, string>, ...args: string[]): Promise<Result> {
  try {
    const r = await run(process.execPath, [cli, 'verify', ...args], { env });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Every file of the data directory, by relative path, to prove verify wrote nothing. */
async function tree(dir: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.set(path.slice(dir.length), await readFile(path));
  }
  return out;
}

/** XORs the last byte of the first occurrence of `needle` with 1: one flipped byte, JSON intact. */
async function flipByte(path: string, needle: string): Promise<void> {
  const buf = await readFile(path);
  const at = buf.indexOf(needle);
  if (at < 0) throw new Error(`${needle} not in ${path}`);
  const i = at + Buffer.byteLength(needle) - 1;
  buf[i] = (buf[i] as number) ^ 1;
  await writeFile(path, buf);
}

/**
 * One closed bridge's data directory (r1 completed, its run.json written on close; r2 in
 * progress), copied afresh for each case so every mutation starts from the intact original.
 */
let base: { b: TestBridge; env: Record<string, string> } | null = null;
let copies = 0;

async function dataDir(): Promise<{ dir: string; root: string; env: Record<string, string> }> {
  if (base === null) {
    const b = await startTestBridge();
    await driveToReady(b, 'r1');
    if ((await complete(b, 'r1')).status !== 201) throw new Error('r1 did not complete');
    const r2 = await b.req('POST', '/runs/r2/events', ev({ type: 'run.created', message: 'second run' }));
    if (r2.status !== 201) throw new Error('r2 was not created');
    await b.close();
    const env = {
      PATH: process.env['PATH'] ?? '',
      HARNESS_BRIDGE_INTEGRITY_KEY: b.t.env['HARNESS_BRIDGE_INTEGRITY_KEY'] ?? '',
    };
    base = { b, env };
  }
  const dir = join(base.b.t.dir, `data-${++copies}`);
  await cp(base.b.t.dataDir, dir, { recursive: true });
  return { dir, root: base.b.t.artifactRoot, env: { ...base.env, HARNESS_DATA_DIR: dir } };
}

t.teardown(async () => {
  if (base) await cleanup(base.b);
});

t.test('an intact data directory verifies, and verify writes nothing', async (t) => {
  const { dir, env } = await dataDir();
  const paths = runPaths(dir, 'r1');
  t.ok((await readdir(paths.dir)).includes('run.json'), 'the snapshot exists');
  // A torn tail (a crash mid-write) is reported, never cut: verify is read-only.
  await appendFile(paths.journal, '{"seq":99,"torn');
  const before = await tree(dir);
  const r = await verify(env);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /^ok r1 \(44 events, 14 artifacts; a torn tail of 15 bytes, never acknowledged\)$/m);
  t.match(r.stdout, /^ok r2 \(1 event, 0 artifacts\)$/m);
  t.equal(r.stderr, '', 'no progress bar when stderr is not a terminal');
  t.same(await tree(dir), before, 'the data directory is byte-for-byte unchanged');
  t.notOk(before.has('/bridge.lease'), 'no lease was taken');
  const named = await verify({ ...env, HARNESS_DATA_DIR: '/nonexistent' }, '--data-dir', dir, 'r2');
  t.equal(named.code, 0);
  t.equal(named.stdout, 'ok r2 (1 event, 0 artifacts)\n', 'only the named run');
  t.equal(named.stdout.includes(env['HARNESS_BRIDGE_INTEGRITY_KEY'] ?? ''), false);
});

t.test('an ok line counts in the singular where there is one', async (t) => {
  const check = (events: number, claims: number, tornBytes: number): RunCheck => ({
    name: 'r',
    tampered: [],
    unverifiable: [],
    events,
    root: null,
    claims: new Map(Array.from({ length: claims }, (_, i) => [`a${i}`, { sha256: '', seq: i }])),
    tornBytes,
    journalMacs: null,
  });
  t.equal(
    verdictLine(check(1, 1, 1)),
    'ok r (1 event, 1 artifact; a torn tail of 1 byte, never acknowledged)',
  );
  t.equal(verdictLine(check(2, 0, 0)), 'ok r (2 events, 0 artifacts)');
});

t.test('records only the commit log holds are unverifiable; disputed ones are tampering', async (t) => {
  const { dir, env } = await dataDir();
  const journal = runPaths(dir, 'r2').journal;
  const lines = (await readFile(journal, 'utf8')).split('\n').filter(Boolean);
  t.equal(lines.length, 1);
  // A crash image: the record is durable in commit.log, lost from the journal's page cache, and
  // no snapshot was written yet (one is only ever written behind a synced journal).
  await writeFile(join(dir, 'commit.log'), `r2 ${lines[0]}\n`);
  await writeFile(journal, '');
  await rm(runPaths(dir, 'r2').snapshot);
  const before = await tree(dir);
  const r = await verify(env);
  t.equal(r.code, 2, r.stdout + r.stderr);
  t.match(
    r.stdout,
    /^UNVERIFIABLE r2: commit\.log holds 1 acknowledged record\(s\) newer than events\.jsonl: start the bridge once/m,
  );
  t.match(r.stdout, /^ok r1 /m, 'a logged record already in its journal is nothing to report');
  t.same(await tree(dir), before, 'nothing is replayed or written');
  // While a bridge holds the lease (a live process on this host: this test's own), the records
  // are lines it has not yet written behind the log; a lease whose process is gone changes nothing.
  const lease = join(dir, 'bridge.lease');
  const holder = { host: hostname(), startedAt: new Date().toISOString() };
  await writeFile(lease, JSON.stringify({ ...holder, pid: process.pid }));
  const live = await verify(env, 'r2');
  t.equal(live.code, 2);
  t.match(
    live.stdout,
    new RegExp(
      `^UNVERIFIABLE r2: .* the running bridge \\(pid ${process.pid} on host .*\\) writes them behind the log`,
      'm',
    ),
  );
  await writeFile(lease, JSON.stringify({ ...holder, pid: 2 ** 22 + 1 }));
  t.match((await verify(env, 'r2')).stdout, /start the bridge once/, 'a dead holder is no bridge');
  await rm(lease);
  await writeFile(
    join(dir, 'commit-disputed.jsonl'),
    `${JSON.stringify({ runId: 'r1', reason: 'commit.log record 3 fails authentication', line: 'x' })}\n`,
  );
  const d = await verify(env, 'r1');
  t.equal(d.code, 1);
  t.match(d.stdout, /^TAMPERED r1: commit-disputed\.jsonl: commit\.log record 3 fails authentication/m);
});

t.test('a recovery mutex left behind is reported, read without following a link, and kept', async (t) => {
  const { dir, env } = await dataDir();
  const mutex = join(dir, 'recovery.mutex');
  await writeFile(
    mutex,
    JSON.stringify({ pid: 4242, host: hostname(), startedAt: '2026-01-02T03:04:05.000Z' }),
  );
  const before = await tree(dir);
  const r = await verify(env);
  t.equal(r.code, 0, 'the runs themselves are intact');
  t.equal(
    r.stderr,
    `harness verify: ${dir} holds a stale or active recovery mutex (pid 4242 since 2026-01-02T03:04:05.000Z): bridge startup refuses it until an operator who has confirmed that no startup is active deletes recovery.mutex\n`,
  );
  t.same(await tree(dir), before, 'the mutex is not removed, nothing is written');
  // What the mutex says is the data directory's text: shown escaped, never raw to the terminal.
  await writeFile(mutex, JSON.stringify({ pid: 1, host: 'h', startedAt: '\u001b[31mRED \u202eevil' }));
  const hostile = (await verify(env)).stderr;
  t.notMatch(hostile, /[\u001b\u202e]/, 'no raw control or bidi character');
  t.match(hostile, /since \\u\{1b\}\[31mRED \\u\{202e\}evil\)/);
  await rm(mutex);
  await symlink(join(dir, 'commit.log'), mutex);
  t.match((await verify(env)).stderr, /holds a malformed recovery mutex: bridge startup refuses it/);
  await rm(mutex);
  t.equal((await verify(env)).stderr, '', 'no mutex, no line');
});

t.test('one flipped byte in each of the three files is tampering (exit 1)', async (t) => {
  const files = [
    ['config', '"artifactRoot":"/', /^TAMPERED r1: run-config\.json: .*fails authentication/m],
    ['journal', '"message":"m', /^TAMPERED r1: events\.jsonl: journal record \d+ fails authentication/m],
    ['snapshot', '"status":"completed', /^TAMPERED r1: run\.json: .*fails authentication/m],
  ] as const;
  for (const [which, needle, expected] of files) {
    t.test(which, async (t) => {
      const { dir, env } = await dataDir();
      const p = runPaths(dir, 'r1');
      await flipByte(which === 'config' ? p.config : which === 'journal' ? p.journal : p.snapshot, needle);
      const r = await verify(env);
      t.equal(r.code, 1, r.stdout + r.stderr);
      t.match(r.stdout, expected);
      t.match(r.stdout, /^ok r2 /m, 'the other run is still reported intact');
    });
  }
});

t.test('a changed or deleted artifact is drift (exit 1)', async (t) => {
  const { root, env } = await dataDir();
  await writeFile(join(root, 'handoff/final.md'), 'edited after completion\n');
  const r = await verify(env, 'r1');
  t.equal(r.code, 1, r.stdout + r.stderr);
  t.match(r.stdout, /^TAMPERED r1: artifact handoff\/final\.md changed since it was claimed \(event \d+\)$/m);
  await writeFile(join(root, 'handoff/final.md'), 'artifact of handoff\n');
  t.equal((await verify(env, 'r1')).code, 0, 'restoring the bytes restores the verdict');
});

t.test('a deleted artifact is tampering (exit 1), not merely unverifiable', async (t) => {
  const { root, env } = await dataDir();
  const path = join(root, 'handoff/final.md');
  const bytes = await readFile(path);
  // The artifact root is shared by every copy: put the file back whatever the verdict.
  t.teardown(() => writeFile(path, bytes));
  await rm(path);
  const r = await verify(env, 'r1');
  t.equal(r.code, 1, r.stdout + r.stderr);
  t.match(r.stdout, /^TAMPERED r1: artifact handoff\/final\.md does not exist$/m);
  t.notMatch(r.stdout, /^UNVERIFIABLE r1/m);
});

t.test(
  'a deleted or replaced artifact root is tampering (exit 1), as the deletion of its files',
  async (t) => {
    const { root, env } = await dataDir();
    const moved = `${root}.moved`;
    await rename(root, moved);
    t.teardown(async () => {
      await rm(root, { recursive: true, force: true });
      await rename(moved, root);
    });
    const gone = await verify(env, 'r1');
    t.equal(gone.code, 1, gone.stdout + gone.stderr);
    t.match(
      gone.stdout,
      /^TAMPERED r1: artifact root .*: artifactRoot does not exist, so its claimed artifacts are gone$/m,
    );
    await writeFile(root, 'a file where the root was\n');
    const file = await verify(env, 'r1');
    t.equal(file.code, 1, file.stdout + file.stderr);
    t.match(file.stdout, /^TAMPERED r1: artifact root .*: artifactRoot is not a directory, so its claimed/m);
  },
);

t.test('a snapshot ahead of its journal is tampering (exit 1)', async (t) => {
  const { dir, env } = await dataDir();
  const journal = runPaths(dir, 'r1').journal;
  const lines = (await readFile(journal, 'utf8')).split('\n').filter(Boolean);
  t.equal(lines.length, 44);
  // Whole records cut from the end: the chain that is left is authentic, only shorter.
  await writeFile(journal, `${lines.slice(0, 40).join('\n')}\n`);
  const r = await verify(env, 'r1');
  t.equal(r.code, 1, r.stdout + r.stderr);
  t.match(r.stdout, /^TAMPERED r1: run\.json is ahead of the journal \(journal records are missing\)/m);
});

t.test('an authentic snapshot of another journal prefix is not bound to this one (exit 1)', async (t) => {
  const { dir, env } = await dataDir();
  // A twin data directory: the same key and run ID, a different first (and only) record.
  const te = await makeTestEnv();
  te.env['HARNESS_BRIDGE_INTEGRITY_KEY'] = env['HARNESS_BRIDGE_INTEGRITY_KEY'] ?? '';
  const twin = await startTestBridge(te);
  t.teardown(() => cleanup(twin));
  const created = await twin.req(
    'POST',
    '/runs/r2/events',
    ev({ type: 'run.created', message: 'a twin run' }),
  );
  t.equal(created.status, 201);
  await twin.close();
  const twinSnap = runPaths(te.dataDir, 'r2').snapshot;
  const ownSnap = runPaths(dir, 'r2').snapshot;
  t.equal(
    JSON.parse(await readFile(twinSnap, 'utf8')).count,
    JSON.parse(await readFile(ownSnap, 'utf8')).count,
  );
  await copyFile(twinSnap, ownSnap);
  const r = await verify(env, 'r2');
  t.equal(r.code, 1, r.stdout + r.stderr);
  t.match(r.stdout, /^TAMPERED r2: run\.json is not bound to this journal$/m);
});

t.test("a run's run-config.json in another run's directory is tampering (exit 1)", async (t) => {
  const { dir, env } = await dataDir();
  await copyFile(runPaths(dir, 'r1').config, runPaths(dir, 'r2').config);
  const r = await verify(env, 'r2');
  t.equal(r.code, 1, r.stdout + r.stderr);
  // Named as startup quarantines it: by the directory's own run (its snapshot says r2), not by
  // the run the copied config names.
  t.match(r.stdout, /^TAMPERED r2: run-config\.json belongs to another run$/m);
});

t.test(
  'a run-config.json with no seal at all is a legacy layout, as startup judges it (exit 2)',
  async (t) => {
    for (const text of ['garbage', '', '{"runId":"r2"}']) {
      const { dir, env } = await dataDir();
      await writeFile(runPaths(dir, 'r2').config, text);
      const r = await verify(env, 'r2');
      t.equal(r.code, 2, `${JSON.stringify(text)}: ${r.stdout}${r.stderr}`);
      t.match(r.stdout, /^UNVERIFIABLE r2: run-config\.json is unsigned: a legacy pre-v0\.8 layout/m);
    }
  },
);

t.test("a run's run.json in another run's directory is tampering (exit 1)", async (t) => {
  const { dir, env } = await dataDir();
  await copyFile(runPaths(dir, 'r1').snapshot, runPaths(dir, 'r2').snapshot);
  const r = await verify(env, 'r2');
  t.equal(r.code, 1, r.stdout + r.stderr);
  t.match(r.stdout, /^TAMPERED r2: run\.json belongs to another run$/m);
});

t.test(
  'symbolic links and legacy state that startup refuses are reported, never followed (exit 2)',
  async (t) => {
    const { dir, env } = await dataDir();
    const r2 = runPaths(dir, 'r2');
    // The journal moved out and linked back: followed, the run would authenticate as intact.
    const outside = join(dir, '..', `outside-${copies}.jsonl`);
    await rename(r2.journal, outside);
    await symlink(outside, r2.journal);
    await symlink(runPaths(dir, 'r1').dir, join(dir, 'elsewhere'));
    await writeFile(join(dir, 'events.jsonl'), '{"type":"node.entered"}\n');
    await writeFile(join(dir, 'run.json'), '{}\n');
    const before = await tree(dir);
    const r = await verify(env);
    t.equal(r.code, 2, r.stdout + r.stderr);
    t.match(
      r.stdout,
      /^UNVERIFIABLE run-[0-9a-f]{64}: symbolic links in the run directory \(events\.jsonl\): a symbolic link/m,
    );
    t.match(r.stdout, /^UNVERIFIABLE elsewhere: a symbolic link, which the bridge never creates or follows/m);
    t.match(r.stdout, /^UNVERIFIABLE events\.jsonl: a legacy pre-v0\.8 layout/m);
    t.match(r.stdout, /^UNVERIFIABLE run\.json: a legacy pre-v0\.8 layout/m);
    t.match(r.stdout, /^ok r1 /m, 'the intact run is still verified');
    t.notMatch(r.stdout, /^ok r2 /m, 'the linked journal is never read as the run');
    t.same(await tree(dir), before, 'nothing is removed or written');
    const named = await verify(env, 'r2');
    t.equal(named.code, 2);
    t.match(named.stdout, /^UNVERIFIABLE r2: symbolic links in the run directory \(events\.jsonl\)/m);
  },
);

t.test('a linked commit log is never read (exit 2)', async (t) => {
  const { dir, env } = await dataDir();
  const outside = join(dir, '..', `log-${copies}`);
  await writeFile(outside, '');
  await rm(join(dir, 'commit.log'), { force: true });
  await symlink(outside, join(dir, 'commit.log'));
  const r = await verify(env);
  t.equal(r.code, 2, r.stdout + r.stderr);
  t.match(r.stdout, /^UNVERIFIABLE commit\.log: a symbolic link/m);
  t.match(
    r.stdout,
    /^UNVERIFIABLE r1: commit\.log, commit-disputed\.jsonl or quarantined-runs\.jsonl is a symbolic link or a special file, never read/m,
  );
});

t.test(
  'with HARNESS_REVIEW_TRUST_SHA256 set, a run sealed under another pin is reported (exit 2)',
  async (t) => {
    const { env } = await dataDir();
    const pin = base?.b.t.env['HARNESS_REVIEW_TRUST_SHA256'] ?? '';
    const same = await verify({ ...env, HARNESS_REVIEW_TRUST_SHA256: pin });
    t.equal(same.code, 0, same.stdout + same.stderr);
    const capitals = await verify({ ...env, HARNESS_REVIEW_TRUST_SHA256: pin.toUpperCase() });
    t.equal(capitals.code, 0, `the pin in capitals is the same pin: ${capitals.stdout}${capitals.stderr}`);
    const other = await verify({ ...env, HARNESS_REVIEW_TRUST_SHA256: 'a'.repeat(64) }, 'r2');
    t.equal(other.code, 2, other.stdout + other.stderr);
    t.match(
      other.stdout,
      /^UNVERIFIABLE r2: sealed under a review-trust pin other than HARNESS_REVIEW_TRUST_SHA256/m,
    );
    const malformed = await verify({ ...env, HARNESS_REVIEW_TRUST_SHA256: 'not-a-pin' });
    t.equal(malformed.code, 2);
    t.equal(malformed.stdout, '');
    t.match(malformed.stderr, /HARNESS_REVIEW_TRUST_SHA256 must be 64 hexadecimal characters/);
  },
);

t.test('without the key, or with a wrong one, nothing is verified', async (t) => {
  const { dir, env } = await dataDir();
  const { HARNESS_BRIDGE_INTEGRITY_KEY: key = '', ...rest } = env;
  const missing = await verify(rest);
  t.equal(missing.code, 2);
  t.equal(missing.stdout, '');
  t.match(missing.stderr, /HARNESS_BRIDGE_INTEGRITY_KEY is not set/);
  // A key shorter than the bridge accepts is refused before any run is read, as startup refuses it.
  const short = await verify({ ...rest, HARNESS_BRIDGE_INTEGRITY_KEY: key.slice(0, 31) });
  t.equal(short.code, 2, 'a 31-byte key: exit 2');
  t.equal(short.stdout, '', 'no run was judged with it');
  t.match(short.stderr, /^harness: HARNESS_BRIDGE_INTEGRITY_KEY must be at least 32 bytes$/m);
  const wrong = await verify({ ...rest, HARNESS_BRIDGE_INTEGRITY_KEY: `${key}x` });
  t.equal(wrong.code, 1, 'a key that authenticates nothing never passes');
  t.notOk(wrong.stdout.includes(key), 'the key is never printed');
  const unknown = await verify(env, 'no-such-run');
  t.equal(unknown.code, 2);
  t.match(unknown.stdout, /^UNVERIFIABLE no-such-run: no run with this ID/m);
  const unreadable = await verify({ ...env, HARNESS_DATA_DIR: join(dir, 'nowhere') });
  t.equal(unreadable.code, 2);
});

t.test('the progress line', async (t) => {
  t.equal(progressLine(512, 1000, 'files', 10), '[#####.....] 512/1000 files');
  t.equal(progressLine(0, 0, 'runs', 4), '[####] 0/0 runs');
  t.equal(progressLine(3, 3, 'files', 4), '[####] 3/3 files');
});
