import { constants } from 'node:fs';
import { appendFile, lstat, open } from 'node:fs/promises';
import { join } from 'node:path';
import { firstPrev, JournalAuthError, verifyLine } from './journal-record.js';
import { scanJournal } from './journal-scan.js';
import { macEqual } from './mac.js';
import { LinkedFileError, openNoFollow, readJsonLines, readNoFollow } from './no-follow.js';
import { COMMIT_LOG_FILE, DISPUTED_FILE, isCanonicalRunId, runPaths } from './paths.js';

export { COMMIT_LOG_FILE, DISPUTED_FILE };

/**
 * Recovery from `commit.log` (commit-log.ts writes it): at startup, before any run is opened,
 * records the journals lack (lost with the page cache in a crash) are authenticated and appended
 * to them; a record that does not fit its journal (bad MAC, a gap, a different record at its
 * position) is kept in `commit-disputed.jsonl` and its run is quarantined, then and on every later
 * start, while the other runs are replayed and served. `harness verify` reads the same files
 * without writing (readLogOffline, judgeLogRecords).
 */

const { O_APPEND, O_WRONLY } = constants;

/** A run whose commit-log records could not be replayed: quarantined with this reason. */
export interface Disputed {
  runId: string;
  reason: string;
}

/**
 * Replays a log's records into the journals that lack them; the records that cannot be replayed
 * are appended (and synced) to `commit-disputed.jsonl`. Returns every run disputed, now or at an
 * earlier start. The caller empties the log afterwards: every journal it names is synced by then.
 */
export async function replayLog(
  dataDir: string,
  key: Buffer,
  buf: Buffer,
  log: (msg: string) => void,
): Promise<{ disputed: Disputed[]; named: string[] }> {
  const { disputed: fresh, named } = await replay(dataDir, key, buf, log);
  const disputedPath = join(dataDir, DISPUTED_FILE);
  if (fresh.length > 0) {
    await appendFile(disputedPath, fresh.map((d) => `${JSON.stringify(d)}\n`).join(''), { mode: 0o600 });
    const h = await open(disputedPath, 'r');
    await h.sync();
    await h.close();
  }
  return { disputed: await readDisputed(disputedPath), named };
}

/** The complete lines of a log as `<runId> <record>`; a torn last line was never acknowledged. */
function* logLines(buf: Buffer): Generator<{ runId: string; record: string; line: string }> {
  const end = buf.lastIndexOf(0x0a) + 1;
  for (const line of buf.toString('utf8', 0, end).split('\n')) {
    if (line === '') continue;
    const space = line.indexOf(' ');
    yield { runId: space > 0 ? line.slice(0, space) : '', record: line.slice(space + 1), line };
  }
}

/**
 * For offline verification: each run's logged records (a crash image's log still holds records a
 * journal may lack; `judgeLogRecords` checks them as startup would) and the disputed records, read
 * without writing anything.
 */
export async function readLogOffline(
  dataDir: string,
): Promise<{ logged: Map<string, string[]>; disputed: Disputed[] }> {
  const logged = new Map<string, string[]>();
  const buf = await readNoFollow(join(dataDir, COMMIT_LOG_FILE)).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return Buffer.alloc(0);
    throw err;
  });
  for (const { runId, record } of logLines(buf)) {
    const records = logged.get(runId) ?? [];
    records.push(record);
    logged.set(runId, records);
  }
  return { logged, disputed: await readDisputed(join(dataDir, DISPUTED_FILE)) };
}

function readDisputed(path: string): Promise<Disputed[]> {
  return readJsonLines(path, (d: { runId?: unknown; reason?: unknown }) =>
    typeof d.runId === 'string' && typeof d.reason === 'string' ? { runId: d.runId, reason: d.reason } : null,
  );
}

/**
 * Appends to each journal the log records it lacks. Returns the records that could not be
 * replayed (with their original lines, so nothing a later inspection needs is lost).
 */
async function replay(
  dataDir: string,
  key: Buffer,
  buf: Buffer,
  log: (msg: string) => void,
): Promise<{ disputed: (Disputed & { line: string })[]; named: string[] }> {
  const byRun = new Map<string, string[]>();
  const disputed: (Disputed & { line: string })[] = [];
  for (const { runId, record, line } of logLines(buf)) {
    if (!isCanonicalRunId(runId)) {
      disputed.push({ runId, reason: 'commit.log holds a record without a valid run ID', line });
      continue;
    }
    const lines = byRun.get(runId) ?? [];
    lines.push(record);
    byRun.set(runId, lines);
  }
  for (const [runId, lines] of byRun) {
    const outcome = await replayRun(dataDir, key, runId, lines);
    if ('reason' in outcome) {
      log(`run ${runId}: ${outcome.reason}`);
      for (const line of lines) disputed.push({ runId, reason: outcome.reason, line });
    } else if (outcome.replayed) {
      log(`run ${runId}: ${outcome.replayed}`);
    }
  }
  return { disputed, named: [...byRun.keys()] };
}

/**
 * Why the run is disputed, or what was replayed (null: nothing was missing). Unless disputed, the
 * journal is fdatasync'd before the caller empties the log: after a kill -9 the page cache may
 * hold records the log made durable and the journal file never synced, so the log may be emptied
 * only once the journal itself is on disk.
 */
async function replayRun(
  dataDir: string,
  key: Buffer,
  runId: string,
  lines: string[],
): Promise<{ reason: string } | { replayed: string | null }> {
  const path = runPaths(dataDir, runId).journal;
  // One run's damaged journal must not stop startup for every run: a journal that is missing or
  // not a regular file (a directory, a FIFO that would block the scan, a link) disputes its run.
  const entry = await lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return null;
    throw err;
  });
  if (!entry) return { reason: 'commit.log names a run without a journal' };
  if (!entry.isFile()) return { reason: 'commit.log cannot be replayed: the journal is not a regular file' };
  let scan: Awaited<ReturnType<typeof scanJournal>>;
  try {
    scan = await scanJournal(key, runId, path);
  } catch (err) {
    if (err instanceof LinkedFileError)
      return { reason: 'commit.log cannot be replayed: the journal is not a regular file' };
    if (!(err instanceof JournalAuthError)) throw err;
    // Damage past the synced records is mended from the log; damage before them is not the log's
    // to mend: opening the journal quarantines the run with that reason.
    const tail = await judgeDamagedTail(key, runId, path, lines);
    if (tail === null) return { reason: `commit.log cannot be replayed: ${err.message}` };
    const h = await openNoFollow(path, O_WRONLY | O_APPEND);
    try {
      await h.truncate(tail.size);
      await h.appendFile(joinLines(tail.missing));
      await h.datasync();
    } finally {
      await h.close();
    }
    return {
      replayed:
        `events.jsonl failed authentication (${err.message}) past the records synced before ` +
        `commit.log began; rewrote records ${tail.from} on from the log`,
    };
  }
  const judged = judgeLogRecords(key, runId, lines, scan.macs);
  if ('reason' in judged) return judged;
  const { missing } = judged;
  const h = await openNoFollow(path, O_WRONLY | O_APPEND);
  try {
    if (missing.length > 0) await h.appendFile(joinLines(missing));
    await h.datasync();
  } finally {
    await h.close();
  }
  return { replayed: missing.length > 0 ? 'replayed records from commit.log' : null };
}

const joinLines = (lines: string[]): Buffer => Buffer.from(lines.map((line) => `${line}\n`).join(''));

/**
 * A journal that fails authentication only past the records it held before the run's first
 * logged record: a checkpoint syncs every journal before it empties the log, so those earlier
 * records are durable, while the later ones were written behind the log and never synced, and
 * power loss may leave such unsynced bytes zeroed, torn or out of order (not only cut short).
 * The log holds every one of those later records durably. Returns where the journal's authentic
 * records end (`from` of them; the first damaged line starts at `size`) and the logged records
 * to write from there, judged as replay judges them: an authentic record the journal holds must be
 * the log's at its position, and the rest must chain on and authenticate. Null if the damage
 * reaches the synced records, or the log does not continue the journal.
 * Read-only: startup rewrites the tail, `harness verify` only reports it.
 */
export async function judgeDamagedTail(
  key: Buffer,
  runId: string,
  path: string,
  lines: readonly string[],
): Promise<{ from: number; size: number; missing: string[] } | null> {
  let prefix: Awaited<ReturnType<typeof scanJournal>>;
  try {
    prefix = await scanJournal(key, runId, path, { readOnly: true, untilDamage: true });
  } catch (err) {
    if (err instanceof LinkedFileError) return null;
    throw err;
  }
  // Judged as replay judges it, damage before the first logged record leaves a gap between the
  // journal and the log. Damage past the last logged record was never written by this bridge
  // (a line reaches a journal only after the log holds it): the log cannot mend either.
  const judged = judgeLogRecords(key, runId, lines, prefix.macs);
  if ('reason' in judged || judged.missing.length === 0) return null;
  return { from: prefix.count, size: prefix.size, missing: judged.missing };
}

/**
 * Judges one run's logged records against its journal's MACs, as startup replay does (and
 * `harness verify`, read-only): each record at a position the journal holds must be the journal's
 * record there; the rest must continue the chain without a gap and authenticate. Returns why the
 * run is disputed, or the records its journal lacks. `macs` is not changed.
 */
export function judgeLogRecords(
  key: Buffer,
  runId: string,
  lines: readonly string[],
  macs: readonly string[],
): { reason: string } | { missing: string[] } {
  // An empty journal: record 0's claimed start is taken as it is (its MAC binds it); opening the
  // run checks that it chains from the run's config.
  let head = macs.at(-1) ?? '';
  const missing: string[] = [];
  const added: string[] = [];
  const macAt = (seq: number) => (seq < macs.length ? macs[seq] : added[seq - macs.length]) ?? '';
  for (const line of lines) {
    let claimed: { seq?: unknown; mac?: unknown };
    try {
      claimed = JSON.parse(line) as { seq?: unknown; mac?: unknown };
    } catch {
      return { reason: 'commit.log holds a record that is not JSON' };
    }
    const seq = claimed.seq;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0)
      return { reason: 'commit.log holds a record without a position' };
    const next = macs.length + added.length;
    if (seq < next) {
      if (typeof claimed.mac !== 'string' || !macEqual(macAt(seq), claimed.mac))
        return { reason: `commit.log record ${seq} differs from the journal's` };
      continue;
    }
    if (seq > next) return { reason: `commit.log skips from journal record ${next} to ${seq}` };
    try {
      head = verifyLine(key, runId, line, seq, seq === 0 ? firstPrev(line, undefined) : head).mac;
    } catch (err) {
      return { reason: `commit.log record ${seq} fails authentication (${(err as Error).message})` };
    }
    missing.push(line);
    added.push(head);
  }
  return { missing };
}
