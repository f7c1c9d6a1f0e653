import { RUN_ID_PATTERN } from './limits.js';

/**
 * SPEC Run: "Non-canonical IDs are rejected, never mapped onto another ID." A router
 * percent-decodes a path before it hands over the parameter, so `/runs/%70` arrives as the run ID
 * `p`: the decoded value alone cannot show that the client spelled another ID. Every character of
 * the canonical alphabet is sent as itself in a URL, so the segment as sent must be the ID itself.
 */

/** Where a route's `:id` parameter sits among the path's `/`-separated segments. */
export function runIdSegment(route: string): number {
  const index = route.split('/').indexOf(':id');
  if (index === -1) throw new Error(`${route} has no :id segment`);
  return index;
}

/**
 * True when `id` is canonical and the raw request path (`url`, query included, before any
 * decoding) carries exactly `id` at `segment`. An escaped character anywhere in the segment, or an
 * escaped `/` before it that moved the segments, refuses.
 */
export function isCanonicalRunIdInPath(url: string, segment: number, id: string): boolean {
  if (!RUN_ID_PATTERN.test(id)) return false;
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.split('/', segment + 1)[segment] === id;
}
