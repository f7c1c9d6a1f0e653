import type { KeyObject } from 'node:crypto';
import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { Compile } from '#typebox/compile';
import { BUNDLE_FORMAT, BUNDLE_MAX_BYTES, type RunBundle, RunBundleSchema } from '../contract/bundle.js';
import { runEventProblems } from '../contract/event-problems.js';
import type { RunEvent } from '../contract/index.js';
import {
  bundleText,
  exportKeyId,
  lastClaims,
  manifestSignedBy,
  parseExportKey,
  partDigest,
} from '../storage/bundle-seal.js';
import { sha256Hex } from '../storage/mac.js';
import { SourceError } from './client.js';
import type { ReplayInput } from './recorded.js';

/**
 * The offline check of a run bundle (src/contract/bundle.ts) with the export key's public half and
 * nothing else: no bridge, no integrity key. `harness verify --bundle` reports it, `harness replay`
 * refuses a bundle that fails it. Each part has its own reason, so the one changed is named.
 */
export class InvalidBundle extends Error {
  override readonly name = 'InvalidBundle';
}

const shape = Compile(RunBundleSchema);

/** Reads a file of at most BUNDLE_MAX_BYTES (and one newline): larger is not a bundle. */
export async function readBundleFile(file: string): Promise<string | InvalidBundle> {
  const handle = await open(file, 'r');
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new SourceError(`${basename(file)} is not a regular file`, 2);
    if (info.size > BUNDLE_MAX_BYTES + 1)
      return new InvalidBundle(`it is larger than a bundle can be (${BUNDLE_MAX_BYTES / 1024 / 1024} MiB)`);
    return (await handle.readFile()).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** The public half of an export key from its PEM file (export-key.pub); a usage error otherwise. */
export async function readPublicKey(file: string): Promise<KeyObject> {
  let text: string;
  try {
    const handle = await open(file, 'r');
    try {
      if ((await handle.stat()).size > 64 * 1024) throw new Error('it is larger than 64 KiB');
      text = (await handle.readFile()).toString('utf8');
    } finally {
      await handle.close();
    }
    return parseExportKey(text, 'public');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new SourceError(`the export key ${file} cannot be used: ${why}`, 2);
  }
}

/** The bundle in `text`, when it verifies with `publicKey`; otherwise InvalidBundle with the reason. */
export function verifyBundle(text: string, publicKey: KeyObject): RunBundle {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidBundle('it is not JSON');
  }
  if (!shape.Check(value)) {
    const first = [...shape.Errors(value)][0];
    throw new InvalidBundle(
      `it is not a ${BUNDLE_FORMAT} bundle (${first ? `${first.instancePath || '/'} ${first.message}` : 'shape'})`,
    );
  }
  const bundle = value as RunBundle;
  const given = exportKeyId(publicKey);
  if (bundle.keyId !== given)
    throw new InvalidBundle(`its key ID ${bundle.keyId} is not the given key's (${given})`);
  const { manifest } = bundle;
  if (!manifestSignedBy(manifest, bundle.signature, publicKey))
    throw new InvalidBundle('its signature does not verify the manifest with the given key');
  if (partDigest(bundle.config) !== manifest.digests.config)
    throw new InvalidBundle('its config is not the one the signed manifest lists');
  if (partDigest(bundle.events) !== manifest.digests.events)
    throw new InvalidBundle('its events are not the ones the signed manifest lists');
  if (partDigest(bundle.artifacts) !== manifest.digests.artifacts)
    throw new InvalidBundle('its artifact digests are not the ones the signed manifest lists');
  consistent(bundle);
  contentsMatch(bundle);
  // Every value checked: a change that keeps them (spacing, member order) is a change all the same.
  if (bundleText(bundle) !== text)
    throw new InvalidBundle('it is not byte for byte the canonical JSON the bridge wrote');
  return bundle;
}

/** What a signed bundle must also be: its parts agreeing with one another and with its status. */
function consistent(b: RunBundle): void {
  const m = b.manifest;
  const quarantined = m.status === 'quarantined';
  if (m.eventCount !== b.events.length)
    throw new InvalidBundle(`its manifest counts ${m.eventCount} events, it holds ${b.events.length}`);
  if (quarantined !== (m.quarantine !== null) || quarantined !== (b.config === null))
    throw new InvalidBundle(`its status ${m.status} disagrees with its quarantine and config`);
  if (b.config !== null && b.config['runId'] !== m.runId)
    throw new InvalidBundle(
      `its config is run ${String(b.config['runId'])}'s, its manifest run ${m.runId}'s`,
    );
  for (let i = 1; i < b.events.length; i++) {
    if (b.events[i]!.seq <= b.events[i - 1]!.seq)
      throw new InvalidBundle(`its events are out of journal order at seq ${b.events[i]!.seq}`);
  }
  const claimed = lastClaims(b.events);
  if (partDigest(claimed) !== partDigest(b.artifacts)) {
    const listed = new Map(b.artifacts.map((a) => [a.path, partDigest(a)]));
    const odd = claimed.find((c) => listed.get(c.path) !== partDigest(c))?.path ?? b.artifacts[0]?.path;
    throw new InvalidBundle(`its artifact digests disagree with the events' last claims (${odd})`);
  }
}

/** With the artifacts' bytes: one entry per listed artifact, each hashing to its signed digest. */
function contentsMatch(b: RunBundle): void {
  const contents = b.contents;
  if (b.manifest.withArtifacts !== (contents !== undefined))
    throw new InvalidBundle(
      b.manifest.withArtifacts
        ? 'its manifest lists artifact bytes it does not hold'
        : 'it holds artifact bytes its manifest does not list',
    );
  if (contents === undefined) return;
  const paths = Object.keys(contents);
  if (paths.length !== b.artifacts.length || b.artifacts.some((a) => !Object.hasOwn(contents, a.path)))
    throw new InvalidBundle("its artifact bytes are not exactly the listed artifacts'");
  for (const a of b.artifacts) {
    const text = contents[a.path]!;
    const bytes = Buffer.from(text, 'base64');
    if (bytes.toString('base64') !== text || bytes.length !== a.size || sha256Hex(bytes) !== a.sha256)
      throw new InvalidBundle(`artifact ${a.path}: its bytes do not hash to the signed digest`);
  }
}

/**
 * A bundle as replay input (source `run-packet`): verified first, then each recorded event judged
 * against the contract as a JSONL line is. Null when `text` is not a bundle at all (no `format`
 * member naming one), so the caller reads the file as JSONL.
 */
export async function bundleReplayInput(
  file: string,
  text: string,
  publicKey: () => Promise<KeyObject>,
): Promise<ReplayInput | null> {
  if (!looksLikeBundle(text)) return null;
  const key = await publicKey();
  let bundle: RunBundle;
  try {
    bundle = verifyBundle(text, key);
  } catch (err) {
    if (!(err instanceof InvalidBundle)) throw err;
    throw new SourceError(`${basename(file)} does not verify, nothing was posted: ${err.message}`, 2);
  }
  const events = bundle.events.map(({ seq, event }) => {
    const problems = runEventProblems(event);
    if (problems.length > 0)
      throw new SourceError(
        `event ${seq} of ${basename(file)} is not a contract event, nothing was posted: ${problems.join('; ')}`,
        2,
      );
    return { where: `event ${seq}`, event: event as unknown as RunEvent };
  });
  if (events.length === 0)
    throw new SourceError(
      `${basename(file)} holds no events (run ${bundle.manifest.runId} is ${bundle.manifest.status})`,
      2,
    );
  const input: ReplayInput = { source: 'run-packet', events, name: bundle.manifest.runId };
  if (bundle.contents !== undefined) input.contents = bundle.contents;
  return input;
}

/** One JSON object naming a bundle format: a JSONL file never parses whole, or has no `format`. */
function looksLikeBundle(text: string): boolean {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && 'format' in value && 'manifest' in value;
  } catch {
    return false;
  }
}
