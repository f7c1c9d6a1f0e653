import {
  BUNDLE_FORMAT,
  BUNDLE_MAX_BYTES,
  type BundleArtifactT,
  type BundleEventT,
  type BundleManifestT,
  type RunBundle,
} from '../contract/bundle.js';
import { BridgeError, type RunConfig, type RunStatus } from '../contract/index.js';
import { bundleText, lastClaims, partDigest, signManifest } from '../storage/bundle-seal.js';
import { sha256Hex } from '../storage/mac.js';
import type { OpenRun, QuarantineInfo } from '../storage/types.js';
import { readArtifact, resolveRoot } from '../validators/artifact-root.js';
import type { BridgeContext } from './context.js';
import { reverifyCompleted } from './reverify.js';
import { isoNow } from './stored-event.js';
import { summaryView } from './views.js';

/** Journal records read per step, so a run over the cap is refused before it is all in memory. */
const READ_STEP = 1000;
const MIB = 1024 * 1024;

const overCap = (message: string, problems: string[] = []) =>
  new BridgeError('payload_too_large', message, problems);
const unexportable = (message: string, problems: string[] = []) =>
  new BridgeError('artifact_verification_failed', message, problems);

/**
 * GET /runs/:id/export (registered only on a bridge that holds an export key): the run's bundle (src/contract/bundle.ts), signed with the bridge's export
 * key, as the text of the file. What is there is exported whatever the run's state: an open or
 * blocked run as far as it went; a quarantined one (also one this read's re-verification
 * quarantines) as its status and reasons only, with no config, events or artifacts, since the
 * bridge no longer vouches for its records. Called in the run's slot.
 */
export async function exportRun(ctx: BridgeContext, runId: string, withArtifacts: boolean): Promise<string> {
  const loaded = await ctx.store.load(runId);
  if (loaded.kind === 'missing') throw new BridgeError('run_not_found', 'no run has this ID');
  if (loaded.kind === 'quarantined') return quarantinedBundle(ctx, runId, loaded.quarantine, withArtifacts);
  const open = loaded.run;
  try {
    await open.journal.idle();
    await reverifyCompleted(ctx, open);
    const q = ctx.store.quarantineOf(runId);
    if (q) return quarantinedBundle(ctx, runId, q, withArtifacts);
    const events = await readEvents(ctx, open);
    const artifacts = lastClaims(events);
    const contents = withArtifacts ? await readContents(open.config, artifacts, events) : undefined;
    return sealed(ctx, {
      runId,
      status: summaryView(open).status,
      quarantine: null,
      config: exportedConfig(open.config),
      events,
      artifacts,
      contents,
    });
  } finally {
    ctx.store.release(open);
  }
}

function quarantinedBundle(ctx: BridgeContext, runId: string, q: QuarantineInfo, withArtifacts: boolean) {
  return sealed(ctx, {
    runId,
    status: 'quarantined',
    quarantine: { reasons: [...q.reasons], since: q.since },
    config: null,
    events: [],
    artifacts: [],
    contents: withArtifacts ? {} : undefined,
  });
}

interface Parts {
  runId: string;
  status: RunStatus;
  quarantine: BundleManifestT['quarantine'];
  config: Record<string, unknown> | null;
  events: BundleEventT[];
  artifacts: BundleArtifactT[];
  contents: Record<string, string> | undefined;
}

function sealed(ctx: BridgeContext, p: Parts): string {
  const key = ctx.env.exportKey!;
  const manifest: BundleManifestT = {
    format: BUNDLE_FORMAT,
    runId: p.runId,
    status: p.status,
    quarantine: p.quarantine,
    exportedAt: isoNow(),
    eventCount: p.events.length,
    withArtifacts: p.contents !== undefined,
    digests: {
      config: partDigest(p.config),
      events: partDigest(p.events),
      artifacts: partDigest(p.artifacts),
    },
  };
  const bundle: RunBundle = {
    format: BUNDLE_FORMAT,
    manifest,
    config: p.config,
    events: p.events,
    artifacts: p.artifacts,
    ...(p.contents === undefined ? {} : { contents: p.contents }),
    keyId: key.keyId,
    signature: signManifest(manifest, key.privateKey),
  };
  const text = bundleText(bundle);
  if (Buffer.byteLength(text) > BUNDLE_MAX_BYTES)
    throw overCap(`the bundle would be larger than ${BUNDLE_MAX_BYTES / MIB} MiB`);
  return text;
}

/**
 * The sealed config as a bundle shows it: never the human token's digest, and no absolute path of
 * the bridge's host (the artifact root, the adapter's path, a repository's), as no view shows them.
 */
function exportedConfig(config: RunConfig): Record<string, unknown> {
  const { humanTokenDigest: _digest, artifactRoot, adapter, ...rest } = config;
  return {
    ...rest,
    artifactRootSet: artifactRoot !== null,
    adapter:
      adapter === null
        ? null
        : {
            rootKind: adapter.rootKind,
            sha256: adapter.sha256,
            finishLineAssurance: adapter.finishLineAssurance,
            ...(adapter.ignoredMayChange ? { ignoredMayChange: adapter.ignoredMayChange } : {}),
            ...(adapter.committed
              ? { committed: { commit: adapter.committed.commit, path: adapter.committed.path } }
              : {}),
          },
  };
}

/** Every journal record, read a step at a time and refused once their JSON passes the cap. */
async function readEvents(ctx: BridgeContext, open: OpenRun): Promise<BundleEventT[]> {
  const total = open.journal.count;
  const events: BundleEventT[] = [];
  let bytes = 0;
  for (let from = 0; from < total; from += READ_STEP) {
    for (const entry of await ctx.store.read(open, from, Math.min(total, from + READ_STEP))) {
      const { artifactRoot: _root, adapterPath: _adapter, ...event } = entry.event;
      const record: BundleEventT = { seq: entry.seq, event, claim: entry.claim ? { ...entry.claim } : null };
      bytes += Buffer.byteLength(JSON.stringify(record)) + 1;
      if (bytes > BUNDLE_MAX_BYTES)
        throw overCap(`the run's events alone are larger than ${BUNDLE_MAX_BYTES / MIB} MiB`, [
          `${total} events; a bundle holds at most ${BUNDLE_MAX_BYTES / MIB} MiB`,
        ]);
      events.push(record);
    }
  }
  return events;
}

/**
 * The claimed artifacts' bytes, base64 by path, each read through the no-link rules and checked
 * against its last claim: bytes that changed since would not verify, so the export is refused
 * rather than sign them. The claimed sizes are summed first, so nothing is read past the cap.
 */
async function readContents(
  config: RunConfig,
  artifacts: BundleArtifactT[],
  events: BundleEventT[],
): Promise<Record<string, string>> {
  const eventBytes = events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0);
  const base64 = artifacts.reduce((n, a) => n + Math.ceil(a.size / 3) * 4 + a.path.length + 8, 0);
  if (eventBytes + base64 > BUNDLE_MAX_BYTES)
    throw overCap(`with its artifacts the bundle would be larger than ${BUNDLE_MAX_BYTES / MIB} MiB`, [
      `${artifacts.length} artifacts of ${artifacts.reduce((n, a) => n + a.size, 0)} bytes; export without --with-artifacts`,
    ]);
  const contents: Record<string, string> = {};
  if (artifacts.length === 0) return contents;
  const root = config.artifactRoot;
  const realRoot = root === null ? null : await resolveRoot(root).catch(() => null);
  if (realRoot === null)
    throw unexportable("the run's artifact root cannot be read, so its artifacts cannot be exported");
  for (const a of artifacts) {
    const bytes = await readArtifact(realRoot, a.path, a.size).catch((err: Error) => err);
    if (bytes instanceof Error) throw unexportable(`artifact ${a.path} cannot be exported`, [bytes.message]);
    if (sha256Hex(bytes) !== a.sha256)
      throw unexportable(`artifact ${a.path} changed since it was claimed (event ${a.seq})`, [
        'its bytes would not verify against the claimed digest; export without --with-artifacts',
      ]);
    contents[a.path] = bytes.toString('base64');
  }
  return contents;
}
