import { relative, sep } from 'node:path';
import type { RunViewT } from '../contract/index.js';

/**
 * What `harness watch` looks at: the artifact paths the run's adapter names for its nodes (as the
 * bridge resolved them, never a second reading of the adapter), each with the nodes that name it.
 * Every other file under the root is ignored, and so is every directory that leads to no named
 * path: the watcher never descends into it, so a large root costs nothing per unrelated file.
 */
export class WatchTargets {
  /** Named path -> the nodes whose artifact it is (usually one). */
  readonly nodesByPath = new Map<string, string[]>();
  /** The directories leading to a named path ('' is the root), relative, '/'-separated. */
  private readonly ancestors = new Set<string>(['']);

  constructor(
    readonly realRoot: string,
    nodes: RunViewT['nodes'],
  ) {
    for (const node of nodes) {
      if (typeof node.artifact !== 'string') continue;
      const list = this.nodesByPath.get(node.artifact) ?? [];
      list.push(node.id);
      this.nodesByPath.set(node.artifact, list);
      const parts = node.artifact.split('/');
      for (let i = 1; i < parts.length; i += 1) this.ancestors.add(parts.slice(0, i).join('/'));
    }
  }

  get paths(): string[] {
    return [...this.nodesByPath.keys()];
  }

  /** An absolute path as the watcher reports it, relative to the root with '/' (null: outside). */
  relativeOf(absolute: string): string | null {
    const rel = relative(this.realRoot, absolute);
    if (rel.startsWith('..') || rel.startsWith(sep)) return null;
    return sep === '/' ? rel : rel.split(sep).join('/');
  }

  /** The watcher's filter: true for everything that is neither a named path nor on the way to one. */
  ignores = (absolute: string): boolean => {
    const rel = this.relativeOf(absolute);
    return rel === null || !(this.nodesByPath.has(rel) || this.ancestors.has(rel));
  };

  /** The named paths an event at `rel` may have changed: itself, or every one under a directory. */
  affected(rel: string): string[] {
    if (this.nodesByPath.has(rel)) return [rel];
    if (!this.ancestors.has(rel)) return [];
    return rel === '' ? this.paths : this.paths.filter((p) => p.startsWith(`${rel}/`));
  }
}
