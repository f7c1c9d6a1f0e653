import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { CREDENTIAL_MIN_BYTES, canonicalTrustPin, RUN_ID_PATTERN } from '../contract/index.js';
import { InvalidBundle, readBundleFile, verifyBundle } from '../sources/bundle.js';
import { SourceError } from '../sources/client.js';
import { judgeLogRecords, readLogOffline } from '../storage/commit-log-replay.js';
import { type DriftQuarantine, readDriftQuarantines } from '../storage/drift-quarantines.js';
import { leaseHolderNow, mutexLeftBehind } from '../storage/lease.js';
import { MUTEX_FILE } from '../storage/paths.js';
import { resolveRoot } from '../validators/artifact-root.js';
import { HashPool } from '../workers/pool.js';
import { requireEnv, UsageError } from './env.js';
import { exportPublicKey } from './export.js';
import { Progress } from './progress.js';
import { terminalText } from './terminal.js';
import { LOG_LINK_REASON, layoutTargets, OTHER_PIN_REASON } from './verify-layout.js';
import { authenticateRun, type RunCheck } from './verify-run.js';

/**
 * `harness verify [--data-dir D] [runId...]`: an offline check of a data directory with nothing
 * but the integrity key: what bridge startup refuses (links, legacy state and, with
 * HARNESS_REVIEW_TRUST_SHA256 set, runs sealed under another pin: verify-layout.ts), config,
 * journal chain and snapshot MACs, then every claimed artifact re-hashed, and what the commit log
 * holds for each run. It never takes the bridge lease, never follows a link and never writes (a
 * torn tail is reported, not cut; logged records are reported, not replayed).
 * Exit 0 all intact, 1 anything tampered or drifted, 2 anything that could not be verified.
 */
const RUN_CONCURRENCY = 8;

/** Runs `fn` over `items` with at most `limit` in flight. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Re-hashes the run's claimed artifacts in the pool; drift and deletion are tampering. */
async function checkArtifacts(check: RunCheck, pool: HashPool, onFiles: (n: number) => void) {
  if (check.root === null || check.claims.size === 0) return;
  const real = await resolveRoot(check.root).catch((err: Error) => err);
  if (real instanceof Error) {
    // A root gone (or replaced by a file) takes every claimed artifact with it: tampering, as the
    // deletion of one is, and what a read of the completed run would quarantine it for.
    check.tampered.push(`artifact root ${check.root}: ${real.message}, so its claimed artifacts are gone`);
    onFiles(check.claims.size);
    return;
  }
  const paths = [...check.claims.keys()];
  let reported = 0;
  const results = await pool.claimMany(check.root, paths, {
    onProgress: (done) => {
      onFiles(done - reported);
      reported = done;
    },
  });
  for (const r of results) {
    const claim = check.claims.get(r.path);
    if (!r.ok) check.tampered.push(`artifact ${r.message}`);
    else if (claim && r.sha256 !== claim.sha256)
      check.tampered.push(`artifact ${r.path} changed since it was claimed (event ${claim.seq})`);
  }
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** One run's verdict, the line verify prints for it. */
export function verdictLine(check: RunCheck): string {
  if (check.tampered.length > 0)
    return `TAMPERED ${check.name}: ${[...check.tampered, ...check.unverifiable].join('; ')}`;
  if (check.unverifiable.length > 0) return `UNVERIFIABLE ${check.name}: ${check.unverifiable.join('; ')}`;
  const torn =
    check.tornBytes > 0 ? `; a torn tail of ${count(check.tornBytes, 'byte')}, never acknowledged` : '';
  return `ok ${check.name} (${count(check.events, 'event')}, ${count(check.claims.size, 'artifact')}${torn})`;
}

/**
 * The run's commit.log records, judged as the bridge's startup replay judges them: one that
 * contradicts the journal would get the run quarantined at the next start, so it is tampering
 * now; records the journal lacks (a crash image) are replayed then, so the run is unverifiable
 * until the bridge has started once, or, while a bridge holds the lease, until it has written
 * them behind the log. Records it disputed at an earlier start are tampering too.
 */
function checkLog(
  check: RunCheck,
  log: Awaited<ReturnType<typeof readLogOffline>> & { drift: DriftQuarantine[] },
  key: Buffer,
  bridge: string | null,
): void {
  const lines = log.logged.get(check.name) ?? [];
  if (lines.length > 0 && check.journalMacs !== null) {
    const judged = judgeLogRecords(key, check.name, lines, check.journalMacs);
    if ('reason' in judged) {
      check.tampered.push(`${judged.reason}: the bridge would quarantine the run at its next start`);
    } else if (judged.missing.length > 0) {
      const what = `commit.log holds ${judged.missing.length} acknowledged record(s) newer than events.jsonl`;
      check.unverifiable.push(
        bridge === null
          ? `${what}: start the bridge once to replay them, then verify again`
          : `${what}: the running bridge (${bridge}) writes them behind the log; verify again once it is idle or stopped`,
      );
    }
  }
  for (const d of log.disputed) {
    if (d.runId === check.name) check.tampered.push(`commit-disputed.jsonl: ${d.reason}`);
  }
  // A completed run a bridge read found drifted stays quarantined, even with the bytes put back.
  for (const d of log.drift) {
    if (d.runId === check.name && d.createdAt === check.createdAt)
      check.tampered.push(`quarantined-runs.jsonl: a read found ${d.reason}`);
  }
}

/**
 * Every run of the data directory (or the runs `ids` name) authenticated as `harness verify`
 * authenticates it, but for its artifacts: layout, config, journal chain, snapshot, and what the
 * commit log and (unless `drift` is false) the recorded drift quarantines say of it. `harness store
 * copy` reads its source so, and copies the drift quarantines instead.
 */
export async function authenticateRuns(
  dataDir: string,
  ids: string[],
  key: Buffer,
  progress: Progress,
  trustPin: string | null = null,
  drift = true,
): Promise<RunCheck[]> {
  const { targets, otherPin, logLinked } = await layoutTargets(dataDir, ids, key, trustPin);
  const log = logLinked
    ? { logged: new Map(), disputed: [], drift: [] }
    : { ...(await readLogOffline(dataDir)), drift: drift ? await readDriftQuarantines(dataDir) : [] };
  const bridge = await leaseHolderNow(dataDir);
  const checks: RunCheck[] = [];
  progress.phase(targets.length, 'runs');
  await eachLimited(targets, RUN_CONCURRENCY, async (t) => {
    if (t.dir === null) {
      checks.push({
        name: t.name,
        tampered: [],
        unverifiable: [t.reason ?? 'not a run directory'],
        events: 0,
        root: null,
        claims: new Map(),
        tornBytes: 0,
        journalMacs: null,
      });
    } else {
      const check = await authenticateRun(
        dataDir,
        t.dir,
        key,
        (runId) => (bridge === null ? (log.logged.get(runId) ?? []) : []),
        [...log.logged.keys()],
      );
      checkLog(check, log, key, bridge);
      check.journalMacs = null; // judged: not kept while the other runs are read
      if (logLinked) check.unverifiable.push(LOG_LINK_REASON);
      if (otherPin.has(check.name)) check.unverifiable.push(OTHER_PIN_REASON);
      checks.push(check);
    }
    progress.update(checks.length);
  });
  return checks.sort((a, b) => a.name.localeCompare(b.name));
}

export async function verifyDataDir(
  dataDir: string,
  ids: string[],
  key: Buffer,
  progress: Progress,
  trustPin: string | null = null,
) {
  const checks = await authenticateRuns(dataDir, ids, key, progress, trustPin);
  const files = checks.reduce((n, c) => n + c.claims.size, 0);
  if (files === 0) return checks;
  const pool = new HashPool();
  try {
    let hashed = 0;
    progress.phase(files, 'files');
    const onFiles = (n: number) => {
      hashed += n;
      progress.update(hashed);
    };
    await eachLimited(checks, RUN_CONCURRENCY, (c) => checkArtifacts(c, pool, onFiles));
  } finally {
    progress.clear();
    await pool.close();
  }
  return checks;
}

/**
 * `harness verify --bundle FILE [--key PUB]`: one line, `ok` (exit 0) or `INVALID` and the reason
 * (exit 1); a file or key that cannot be read is a usage error (exit 2). No bridge, no integrity key.
 */
async function verifyBundleFile(file: string, keyFile: string | undefined): Promise<number> {
  const key = await exportPublicKey(keyFile)();
  const text = await readBundleFile(file).catch((err: NodeJS.ErrnoException) => {
    if (err instanceof SourceError) throw new UsageError(err.message);
    throw new UsageError(`cannot read ${file}: ${err.code ?? err.message}`);
  });
  const name = terminalText(file);
  try {
    if (text instanceof InvalidBundle) throw text;
    const { manifest: m, artifacts, keyId } = verifyBundle(text, key);
    const bytes = m.withArtifacts ? ' with their bytes' : '';
    process.stdout.write(
      `ok ${name}: run ${m.runId} (${m.status}, ${count(m.eventCount, 'event')}, ${count(artifacts.length, 'artifact')}${bytes}), signed by export key ${keyId}\n`,
    );
    return 0;
  } catch (err) {
    if (!(err instanceof InvalidBundle)) throw err;
    process.stdout.write(`INVALID ${name}: ${terminalText(err.message)}\n`);
    return 1;
  }
}

/**
 * The integrity key (HARNESS_BRIDGE_INTEGRITY_KEY) and, where configured, the review-trust pin
 * (HARNESS_REVIEW_TRUST_SHA256) an offline command reads runs under; a usage error when missing
 * or malformed.
 */
export function offlineKeys(): { key: Buffer; pin: string | null } {
  const secret = requireEnv('HARNESS_BRIDGE_INTEGRITY_KEY');
  if (Buffer.byteLength(secret, 'utf8') < CREDENTIAL_MIN_BYTES)
    throw new UsageError(`HARNESS_BRIDGE_INTEGRITY_KEY must be at least ${CREDENTIAL_MIN_BYTES} bytes`);
  // The pin is compared only where it is configured, as it is wherever the bridge runs.
  const rawPin = process.env['HARNESS_REVIEW_TRUST_SHA256'] || null;
  const pin = rawPin === null ? null : canonicalTrustPin(rawPin);
  if (rawPin !== null && pin === null)
    throw new UsageError('HARNESS_REVIEW_TRUST_SHA256 must be 64 hexadecimal characters');
  return { key: Buffer.from(secret, 'utf8'), pin };
}

export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description('offline check of a data directory: config, journal and snapshot MACs, artifact hashes')
    .argument('[runIds...]', 'only these runs (default: every run in the data directory)')
    .option('--data-dir <dir>', 'data directory (default HARNESS_DATA_DIR or ~/.harness/runs)')
    .option('--bundle <file>', 'instead: check an exported run bundle offline, with the export key only')
    .option('--key <file>', "the bundle's export key (public half); default ~/.harness/dev/export-key.pub")
    .action(async (runIds: string[], opts: { dataDir?: string; bundle?: string; key?: string }) => {
      if (opts.bundle !== undefined) {
        if (runIds.length > 0 || opts.dataDir !== undefined)
          throw new UsageError('--bundle checks one bundle: give no run IDs and no --data-dir with it');
        process.exitCode = await verifyBundleFile(opts.bundle, opts.key);
        return;
      }
      if (opts.key !== undefined) throw new UsageError('--key is the key of a --bundle');
      const bad = runIds.find((id) => !RUN_ID_PATTERN.test(id));
      if (bad !== undefined) throw new UsageError(`run ID ${JSON.stringify(bad)} is not canonical`);
      const { key, pin } = offlineKeys();
      const dataDir = resolve(
        opts.dataDir ?? (process.env['HARNESS_DATA_DIR'] || join(homedir(), '.harness', 'runs')),
      );
      const checks = await verifyDataDir(dataDir, runIds, key, new Progress(), pin);
      // Not a run's integrity, so no exit code of its own: but the bridge will not start here, and
      // records only commit.log holds wait for a start that replays them.
      const mutex = await mutexLeftBehind(dataDir);
      if (mutex !== null)
        process.stderr.write(
          `harness verify: ${terminalText(dataDir)} holds ${terminalText(mutex)}: bridge startup refuses it until an operator who has confirmed that no startup is active deletes ${MUTEX_FILE}\n`,
        );
      if (checks.length === 0) process.stderr.write(`harness verify: no runs in ${terminalText(dataDir)}\n`);
      // Artifact roots and paths (and the problems naming them) are agent-chosen strings.
      for (const c of checks) process.stdout.write(`${terminalText(verdictLine(c))}\n`);
      const tampered = checks.some((c) => c.tampered.length > 0);
      const unverifiable = checks.some((c) => c.unverifiable.length > 0);
      process.exitCode = tampered ? 1 : unverifiable ? 2 : 0;
    });
}
