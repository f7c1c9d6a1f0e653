import type { Dirent } from 'node:fs';
import { opendir } from 'node:fs/promises';
import { sep } from 'node:path';
import type { InventoryEntryT } from '../contract/artifacts/index.js';
import { claimArtifact, type DescriptorHasher, inlineHasher } from './artifact-root.js';

/**
 * The artifact inventory: every regular file of the artifact root written before review, with its
 * SHA-256 and size, sorted by path. Paths written after review (the review itself, the run packet
 * that binds it, and the handoff narrative) are excluded so signing does not invalidate itself.
 * A link or special file anywhere in the tree is a problem, never silently skipped: an
 * unsignable entry must not hide beside signed ones.
 */
export const POST_REVIEW_PREFIXES: readonly string[] = ['review/', 'handoff/'];
export const POST_REVIEW_FILES: readonly string[] = ['run/packet.json'];
export const INVENTORY_MAX_ENTRIES = 50_000;
const MAX_DEPTH = 32;
const HASH_PARALLELISM = 8;

export function isPostReview(relPath: string): boolean {
  return POST_REVIEW_FILES.includes(relPath) || POST_REVIEW_PREFIXES.some((p) => relPath.startsWith(p));
}

/** Opens (no link at any component), hashes and sizes many paths in one call (the worker pool). */
export interface BatchClaimer {
  claimMany(
    realRoot: string,
    paths: readonly string[],
  ): Promise<
    (
      | { ok: true; path: string; sha256: string; size: number }
      | { ok: false; path: string; message: string }
    )[]
  >;
}

export interface Inventory {
  entries: InventoryEntryT[];
  problems: string[];
}

export async function buildInventory(
  realRoot: string,
  hasher: DescriptorHasher | BatchClaimer = inlineHasher,
): Promise<Inventory> {
  const paths: string[] = [];
  const problems: string[] = [];
  await walk(realRoot, '', 0, paths, problems);
  if (paths.length > INVENTORY_MAX_ENTRIES) {
    return { entries: [], problems: [`the artifact root holds more than ${INVENTORY_MAX_ENTRIES} files`] };
  }
  paths.sort(comparePaths);
  if (typeof hasher !== 'function') {
    // The pool re-opens each path with the same no-link checks, in batches, results in path order.
    const entries: InventoryEntryT[] = [];
    for (const r of await hasher.claimMany(realRoot, paths)) {
      if (r.ok) entries.push({ path: r.path, sha256: r.sha256, size: r.size });
      else problems.push(`inventory: ${r.message}`);
    }
    return { entries, problems };
  }
  const entries: InventoryEntryT[] = new Array(paths.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < paths.length; i = next++) {
      const rel = paths[i]!;
      try {
        // claimArtifact re-opens without following links at any component: a swap after the
        // directory walk cannot redirect the hash outside the root.
        const claim = await claimArtifact(realRoot, rel, hasher);
        entries[i] = { path: rel, sha256: claim.sha256, size: claim.size };
      } catch (err) {
        problems.push(`inventory: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: HASH_PARALLELISM }, worker));
  return { entries: entries.filter(Boolean), problems };
}

async function walk(
  realRoot: string,
  relDir: string,
  depth: number,
  out: string[],
  problems: string[],
): Promise<void> {
  if (depth > MAX_DEPTH) {
    problems.push(`inventory: ${relDir} is nested deeper than ${MAX_DEPTH} directories`);
    return;
  }
  const dir = await opendir(relDir === '' ? realRoot : `${realRoot}${sep}${relDir}`);
  const children: Dirent[] = [];
  for await (const d of dir) children.push(d);
  for (const d of children) {
    const rel = relDir === '' ? d.name : `${relDir}/${d.name}`;
    if (d.isDirectory()) {
      if (isPostReview(`${rel}/`)) continue;
      await walk(realRoot, rel, depth + 1, out, problems);
    } else if (isPostReview(rel)) {
    } else if (d.isFile()) {
      if (out.length > INVENTORY_MAX_ENTRIES) return;
      out.push(rel);
    } else if (d.isSymbolicLink()) {
      problems.push(`inventory: ${rel} is a symbolic link`);
    } else {
      problems.push(`inventory: ${rel} is not a regular file`);
    }
  }
}

/** Byte-wise (code unit) order: locale-independent, so signer and validator agree. */
export function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Paths added, removed or changed between a signed inventory and the current one. */
export function inventoryDrift(
  signed: readonly InventoryEntryT[],
  current: readonly InventoryEntryT[],
): string[] {
  const now = new Map(current.map((e) => [e.path, e]));
  const then = new Map(signed.map((e) => [e.path, e]));
  const drift: string[] = [];
  for (const [path, e] of then) {
    const c = now.get(path);
    if (!c) drift.push(`${path} was removed`);
    else if (c.sha256 !== e.sha256 || c.size !== e.size) drift.push(`${path} changed`);
  }
  for (const path of now.keys()) if (!then.has(path)) drift.push(`${path} was added`);
  return drift;
}
