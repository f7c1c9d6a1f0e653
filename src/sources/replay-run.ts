import { lstat, realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { type BridgeCall, BridgeTimeout, createFreshRun, type NewRunBody, SourceError } from './client.js';
import type { ReplayInput } from './recorded.js';
import {
  carriesArtifacts,
  isFreshRoot,
  moveRoot,
  refuseUnrootedClaims,
  removeRoot,
  writeArtifacts,
} from './replay-artifacts.js';

/** How the replay run is made: its ID, its artifact root and adapter. */
export interface ReplayRunOptions {
  /** The run to create; by default `<name>-replay-<n>`, the first n whose run does not exist. */
  as?: string;
  /**
   * The run's artifact root (absolute): the claims are verified against it; for a bundle that
   * carries its artifacts' bytes, the new or empty directory they are written into.
   */
  artifactRoot?: string;
  /** Where a bundle's bytes go without `artifactRoot`: a new directory per replay run ID. */
  replayRoot?: (runId: string) => string;
  /** The run's adapter (absolute), as `harness blueprint --adapter` passes it. */
  adapterPath?: string;
}

export interface ReplayRun {
  runId: string;
  artifactRoot: string | null;
}

const MAX_NUMBER = 1000;

/**
 * Creates the replay run, which must be new: a replay never appends to (or completes) a run that
 * existed. A bundle's artifact bytes are written first, into `artifactRoot` or the run's
 * `replayRoot`, and the run is created with that root, so the bridge verifies each replayed claim
 * against them as it verifies any claim. Refused before anything is posted or written: claims with
 * no root to verify them against, a given root that is not new or empty for a bundle's bytes, and
 * one other than the root the first event names.
 */
export async function newReplayRun(
  call: BridgeCall,
  input: ReplayInput,
  opts: ReplayRunOptions,
): Promise<ReplayRun> {
  const unpack = carriesArtifacts(input);
  const given = opts.artifactRoot;
  // A first event naming its root (`harness emit --artifact-root`) seals it on the replay run as on
  // the recorded one (docs/api.md): it roots the claims, and a different --artifact-root would
  // have the bridge refuse that event after the run was created.
  const own = await firstEventRoot(input, given);
  refuseUnrootedClaims(input, unpack || given !== undefined || own !== null);
  if (opts.as !== undefined && !RUN_ID_PATTERN.test(opts.as))
    throw new SourceError('--as is not a canonical run ID', 2);
  if (unpack && given !== undefined && !(await isFreshRoot(given)))
    throw new SourceError(
      `--artifact-root ${given} is not empty, nothing was posted: a bundle's artifacts are written into a new or empty directory`,
      2,
    );
  const rootFor = (id: string) => given ?? opts.replayRoot?.(id) ?? null;
  // What undoes the bytes written, when no run takes them: the entries made in a given empty
  // directory, or the whole directory this replay made (never one that existed).
  const givenExisted = given !== undefined && (await lstat(given).catch(() => null)) !== null;
  const entries = [...new Set(Object.keys(input.contents ?? {}).map((p) => p.split('/')[0]!))];
  let written: string | null = null;
  let taken = '';
  try {
    for (const id of candidates(input.name, opts.as)) {
      let root = given ?? null;
      if (unpack) {
        root = rootFor(id);
        if (root === null) throw new Error('a bundle with artifacts needs a directory to write them in');
        // Written once, into the first root this replay makes (or the given empty one); moved
        // along when the run ID turns out taken. A root that exists is another's, never touched.
        const placed =
          written === null
            ? await writeArtifacts(root, input.contents!, givenExisted ? 'empty' : 'new')
            : written === root || (await moveRoot(written, root));
        if (!placed) {
          if (given !== undefined)
            throw new SourceError(
              `--artifact-root ${given} was made meanwhile by someone else, nothing was posted: give a new or empty directory`,
              2,
            );
          taken = `${root} exists already`;
          continue;
        }
        written = root;
      }
      if (await createFreshRun(call, runBody(input, id, root, opts.adapterPath)))
        return { runId: id, artifactRoot: root ?? own };
      taken = `run ${id} exists already`;
    }
  } catch (err) {
    if (written !== null && err instanceof BridgeTimeout)
      // The bridge may have created the run with this root: removing it could empty a live run's root.
      throw new BridgeTimeout(
        `${err.message}; it may have created the replay run with the artifact root ${written}, which is kept: remove it if that run does not exist`,
      );
    if (written !== null) await removeRoot(written, givenExisted ? entries : null);
    throw err;
  }
  if (written !== null) await removeRoot(written, givenExisted ? entries : null);
  if (opts.as !== undefined) throw new SourceError(`${taken}: a replay is posted as a new run`, 1);
  const stem = runIdStem(input.name);
  throw new SourceError(`runs ${stem}-replay-1 to -${MAX_NUMBER} all exist: name the replay with --as`, 1);
}

/**
 * The root the input's first event names, refused up front (exit 2, nothing posted) when
 * `--artifact-root` names another directory: the run has one root.
 */
async function firstEventRoot(input: ReplayInput, given: string | undefined): Promise<string | null> {
  const first = input.events[0];
  const own = first?.event.artifactRoot;
  if (first === undefined || own === undefined) return null;
  if (given !== undefined && !(await sameDirectory(own, given)))
    throw new SourceError(
      `${first.where} names artifactRoot ${own} and --artifact-root is ${given}, nothing was posted: a run has one artifact root; give the same directory, or leave --artifact-root out`,
      2,
    );
  return own;
}

/** The same path, or two paths resolving to the same directory (as the bridge resolves a root). */
async function sameDirectory(a: string, b: string): Promise<boolean> {
  if (resolve(a) === resolve(b)) return true;
  const [realA, realB] = await Promise.all([a, b].map((p) => realpath(p).catch(() => null)));
  return realA !== null && realA === realB;
}

function runBody(input: ReplayInput, id: string, root: string | null, adapterPath?: string): NewRunBody {
  return {
    id,
    runMode: 'replay',
    eventSource: input.source,
    title: `replay of ${input.name}`.slice(0, 200),
    ...(root === null ? {} : { artifactRoot: root }),
    ...(adapterPath === undefined ? {} : { adapterPath }),
  };
}

function* candidates(name: string, as: string | undefined): Generator<string> {
  if (as !== undefined) {
    yield as;
    return;
  }
  const stem = runIdStem(name);
  for (let n = 1; n <= MAX_NUMBER; n += 1) yield `${stem}-replay-${n}`;
}

/** The input's name as the start of a canonical run ID (other characters become `-`). */
export function runIdStem(name: string): string {
  const stem = name
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 100);
  return stem === '' ? 'run' : stem;
}
