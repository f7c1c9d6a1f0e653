import type { JournalEntry } from '../contract/index.js';
import { JOURNAL_RECORD_MAX_BYTES } from '../contract/index.js';
import { firstPrev, JournalAuthError, type JournalRecord, verifyLine } from './journal-record.js';
import { openNoFollow, READ, READ_WRITE } from './no-follow.js';

/**
 * `events.jsonl` read back: the chunked scan that authenticates a whole journal when its run is
 * opened, when startup replays the commit log into it (commit-log-replay.ts) and when `harness
 * verify` reads it. The writer that appends to it is journal.ts; the record format is
 * journal-record.ts.
 */

export interface ScanResult {
  /** Records authenticated. */
  count: number;
  offsets: number[];
  macs: string[];
  size: number;
  truncatedBytes: number;
}

export interface ScanOptions {
  /** Offline verification: open for reading only, report a torn tail without cutting it. */
  readOnly?: boolean;
  /** Called with each authenticated entry in journal order; the scan itself keeps none. */
  onEntry?: (entry: JournalEntry) => void;
  /** Bytes read at a time (tests make it small to put records across reads). */
  chunkBytes?: number;
  /**
   * The MAC of the run's config (`configMac`): record 0 must chain from it, so the journal is
   * bound to the config it was started under. Without it (commit-log replay, which has no config
   * at hand) record 0 is authenticated by its MAC alone; opening the run checks the binding.
   */
  genesis?: string;
  /**
   * Stops at the first complete line that fails authentication instead of throwing: `count`,
   * `macs` and `size` then cover the authentic records before it, and nothing is cut (with
   * `readOnly`: the prefix a damaged tail is rewritten after, commit-log-replay.ts).
   */
  untilDamage?: boolean;
}

const NEWLINE = Buffer.from('\n');

/** Reads of this size keep a scan's memory bounded whatever the journal's size. */
export const SCAN_CHUNK_BYTES = 1024 * 1024;

/**
 * Reads and authenticates the whole journal, a chunk at a time: memory stays bounded by one chunk
 * plus one record (the bridge never writes a line longer than JOURNAL_RECORD_MAX_BYTES), however
 * large the file, and entries go to `onEntry` instead of being collected. An incomplete last line
 * (no newline: a write torn by a crash, never acknowledged because its fdatasync had not
 * returned) is cut off, unless it ends as a record does and authenticates as the next one: that
 * record lacks only its newline, which is written back. Any complete line that fails
 * authentication, or is longer than any record the bridge writes, is an error, never skipped. `readOnly` (offline verification) opens the file
 * for reading only and reports a torn tail in `truncatedBytes` without cutting it.
 */
export async function scanJournal(
  key: Buffer,
  runId: string,
  path: string,
  opts: ScanOptions = {},
): Promise<ScanResult> {
  const chunk = Math.max(1, opts.chunkBytes ?? SCAN_CHUNK_BYTES);
  const onEntry = opts.onEntry;
  const handle = await openNoFollow(path, opts.readOnly ? READ : READ_WRITE);
  try {
    // Holds the unfinished line carried over (under one record) and the next chunk after it.
    const buf = Buffer.allocUnsafe(JOURNAL_RECORD_MAX_BYTES + chunk);
    const offsets: number[] = [];
    const macs: string[] = [];
    let prev = ''; // record 0's is chosen by firstPrev
    let base = 0; // file offset of buf[0]
    let len = 0; // bytes of buf in use
    let lineStart = 0; // file offset of the line not yet ended
    let overlong = false; // inside a line already longer than any record
    /** Authenticates `line` as the next record (chained to the last); throws if it is not. */
    const verifyNext = (line: string): JournalRecord => {
      const seq = offsets.length;
      return verifyLine(key, runId, line, seq, seq === 0 ? firstPrev(line, opts.genesis) : prev);
    };
    /** Takes an authenticated record starting at file offset `at`. */
    const take = (r: JournalRecord, at: number): void => {
      onEntry?.({ seq: offsets.length, event: r.event, claim: r.claim, seal: r.seal ?? null });
      offsets.push(at);
      macs.push(r.mac);
      prev = r.mac;
    };
    for (;;) {
      const { bytesRead } = await handle.read(buf, len, chunk, base + len);
      if (bytesRead === 0) break;
      len += bytesRead;
      const view = buf.subarray(0, len);
      let at = 0;
      let nl = view.indexOf(0x0a, at);
      if (overlong && nl >= 0) {
        if (opts.untilDamage) return authenticPrefix(offsets, macs, lineStart);
        throw new JournalAuthError(`journal record ${offsets.length} exceeds its ceiling`);
      }
      while (nl >= 0) {
        let r: JournalRecord;
        try {
          r = verifyNext(view.toString('utf8', at, nl));
        } catch (err) {
          if (!opts.untilDamage || !(err instanceof JournalAuthError)) throw err;
          return authenticPrefix(offsets, macs, base + at);
        }
        take(r, base + at);
        at = nl + 1;
        nl = view.indexOf(0x0a, at);
      }
      if (!overlong) lineStart = base + at;
      if (overlong || len - at >= JOURNAL_RECORD_MAX_BYTES) {
        // No record is this long: a later newline makes it a forged record (an error above), the
        // end of the file makes it a torn tail. Its bytes are not kept meanwhile.
        overlong = true;
        base += len;
        len = 0;
      } else {
        buf.copy(buf, 0, at, len);
        base += at;
        len -= at;
      }
    }
    const total = base + len;
    // A last line that is a whole record the bridge wrote (it ends where a record ends) and
    // authenticates as the next one lacks only its newline: it is kept (and the newline written),
    // never cut as torn. Anything else after the last newline is torn (or foreign) and cut.
    if (!overlong && len > 0 && buf[len - 1] === 0x7d) {
      let r: JournalRecord | null = null;
      try {
        r = verifyNext(buf.toString('utf8', 0, len));
      } catch {
        r = null;
      }
      if (r !== null) {
        take(r, lineStart);
        if (opts.readOnly) return { count: offsets.length, offsets, macs, size: total, truncatedBytes: 0 };
        await handle.write(NEWLINE, 0, 1, total);
        await handle.datasync();
        return { count: offsets.length, offsets, macs, size: total + 1, truncatedBytes: 0 };
      }
    }
    const end = lineStart;
    if (end < total && !opts.readOnly) {
      await handle.truncate(end);
      await handle.datasync();
    }
    return { count: offsets.length, offsets, macs, size: end, truncatedBytes: total - end };
  } finally {
    await handle.close();
  }
}

/** A scan stopped at damage (`untilDamage`): the authentic records before it, ending at `size`. */
function authenticPrefix(offsets: number[], macs: string[], size: number): ScanResult {
  return { count: offsets.length, offsets, macs, size, truncatedBytes: 0 };
}
