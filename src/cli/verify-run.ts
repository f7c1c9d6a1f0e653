import { join } from 'node:path';
import type { JournalEntry, RunConfig } from '../contract/index.js';
import { judgeDamagedTail } from '../storage/commit-log-replay.js';
import { JournalAuthError } from '../storage/journal-record.js';
import { type ScanResult, scanJournal } from '../storage/journal-scan.js';
import { isSignedConfigText } from '../storage/layout.js';
import { macEqual, sha256Hex } from '../storage/mac.js';
import { LinkedFileError, readTextNoFollow } from '../storage/no-follow.js';
import { CONFIG_FILE, JOURNAL_FILE, SNAPSHOT_FILE } from '../storage/paths.js';
import { claimedRunId } from '../storage/run-attribution.js';
import { configMac, readConfig } from '../storage/run-files.js';
import { SealError } from '../storage/sealed-file.js';
import { readSnapshot } from '../storage/snapshot.js';

/**
 * The offline authentication of one run directory for `harness verify`: the same checks the
 * bridge makes when it opens a run (config seal, the whole journal chain, a snapshot bound to a
 * journal prefix and never ahead of it), read-only: a torn tail is reported, never cut.
 */
export interface RunCheck {
  /** The run ID (trusted only when it hashes to the directory name), else the directory name. */
  name: string;
  tampered: string[];
  unverifiable: string[];
  events: number;
  root: string | null;
  /** The latest claim per artifact path: an artifact re-written and re-claimed supersedes itself. */
  claims: Map<string, { sha256: string; seq: number }>;
  tornBytes: number;
  /** When the run was created (from its authentic config), which a recorded drift quarantine names. */
  createdAt?: string;
  /** The journal's record MACs once it authenticated (commit.log records are judged against them). */
  journalMacs: readonly string[] | null;
}

const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code;

async function checkConfig(check: RunCheck, dir: string, key: Buffer): Promise<RunConfig | null> {
  const path = join(dir, CONFIG_FILE);
  try {
    return await readConfig(path, key);
  } catch (err) {
    if (errno(err) === 'ENOENT') {
      check.unverifiable.push('run-config.json is missing (a pre-v0.8 or damaged run directory)');
    } else if (
      err instanceof SealError &&
      !isSignedConfigText(await readTextNoFollow(path).catch(() => ''))
    ) {
      // As startup judges it (storage/layout.ts): no seal at all is a legacy layout, refused.
      check.unverifiable.push('run-config.json is unsigned: a legacy pre-v0.8 layout, archive it');
    } else if (err instanceof SealError) {
      check.tampered.push(`run-config.json: ${err.message} (or the key is not this bridge's)`);
    } else if (err instanceof LinkedFileError) {
      // Not a regular file (a FIFO, say): the bridge quarantines the run with the same words.
      check.tampered.push(`run-config.json: ${err.message}`);
    } else {
      check.unverifiable.push(`run-config.json cannot be read (${errno(err) ?? String(err)})`);
    }
    return null;
  }
}

async function checkJournal(
  check: RunCheck,
  dir: string,
  key: Buffer,
  config: RunConfig,
  logged: readonly string[],
): Promise<ScanResult | null> {
  // The latest claim per path, gathered as the journal streams by (entries are not kept).
  const onEntry = ({ claim, seq }: JournalEntry) => {
    if (claim) check.claims.set(claim.path, { sha256: claim.sha256, seq });
  };
  const path = join(dir, JOURNAL_FILE);
  try {
    return await scanJournal(key, check.name, path, {
      readOnly: true,
      onEntry,
      genesis: configMac(key, config),
    });
  } catch (err) {
    if (err instanceof JournalAuthError) {
      // As at startup (commit-log-replay.ts): damage past the synced records, where the log holds
      // every record, is rewritten from the log, not quarantined.
      if (logged.length > 0 && (await judgeDamagedTail(key, check.name, path, logged)) !== null) {
        check.unverifiable.push(
          `events.jsonl: ${err.message}, past the records synced before commit.log began; the log ` +
            'holds every record from there: start the bridge once to rewrite them, then verify again',
        );
      } else {
        check.tampered.push(`events.jsonl: ${err.message}`);
      }
    } else if (errno(err) === 'ENOENT') check.tampered.push('events.jsonl is missing');
    else if (err instanceof LinkedFileError) check.tampered.push(`events.jsonl: ${err.message}`);
    else check.unverifiable.push(`events.jsonl cannot be read (${errno(err) ?? String(err)})`);
    return null;
  }
}

async function checkSnapshot(check: RunCheck, dir: string, key: Buffer, scan: ScanResult | null) {
  let snap: Awaited<ReturnType<typeof readSnapshot>>;
  try {
    snap = await readSnapshot(join(dir, SNAPSHOT_FILE), key);
  } catch (err) {
    if (errno(err) === 'ENOENT') return; // not written yet: the journal alone is authoritative
    if (err instanceof SealError || err instanceof LinkedFileError)
      check.tampered.push(`run.json: ${err.message}`);
    else check.unverifiable.push(`run.json cannot be read (${errno(err) ?? String(err)})`);
    return;
  }
  if (snap.runId !== check.name) return void check.tampered.push('run.json belongs to another run');
  if (scan === null) return; // the binding cannot be checked against a journal that failed
  if (snap.count > scan.count) {
    check.tampered.push('run.json is ahead of the journal (journal records are missing)');
  } else if (snap.count > 0 && !macEqual(scan.macs[snap.count - 1] ?? '', snap.headMac)) {
    check.tampered.push('run.json is not bound to this journal');
  }
}

/**
 * Authenticates the three files of the run directory `dirName` under `dataDir`. `logged` gives a
 * run's commit.log records when the next bridge start would replay them (no bridge is running).
 */
export async function authenticateRun(
  dataDir: string,
  dirName: string,
  key: Buffer,
  logged: (runId: string) => readonly string[] = () => [],
  loggedRuns: readonly string[] = [],
): Promise<RunCheck> {
  const dir = join(dataDir, dirName);
  const check: RunCheck = {
    name: dirName,
    tampered: [],
    unverifiable: [],
    events: 0,
    root: null,
    claims: new Map(),
    tornBytes: 0,
    journalMacs: null,
  };
  const config = await checkConfig(check, dir, key);
  if (config === null) {
    // Named as startup names it (run-attribution.ts), the commit log's runs included.
    check.name = await claimedRunId(join(dir, CONFIG_FILE), dirName, loggedRuns);
    return check;
  }
  check.name = config.runId;
  check.createdAt = config.createdAt;
  if (`run-${sha256Hex(config.runId)}` !== dirName) {
    check.name = await claimedRunId(join(dir, CONFIG_FILE), dirName, loggedRuns);
    check.tampered.push('run-config.json belongs to another run');
    return check;
  }
  check.root = config.artifactRoot;
  const scan = await checkJournal(check, dir, key, config, logged(config.runId));
  await checkSnapshot(check, dir, key, scan);
  if (scan === null) {
    check.claims.clear();
    return check;
  }
  check.events = scan.count;
  check.tornBytes = scan.truncatedBytes;
  check.journalMacs = scan.macs;
  if (check.claims.size > 0 && check.root === null) {
    check.tampered.push('the journal claims artifacts but the run has no artifactRoot');
  }
  return check;
}
