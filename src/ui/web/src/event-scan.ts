import type { EventItem, NodeItem } from './api.js';

/** What the events filters keep: an empty value keeps every event. */
export interface EventFilter {
  type: string;
  node: string;
  status: string;
}

export const NO_FILTER: EventFilter = { type: '', node: '', status: '' };

export const matches = (ev: EventItem, f: EventFilter): boolean =>
  (f.type === '' || ev.type === f.type) &&
  (f.node === '' || ev.nodeId === f.node) &&
  (f.status === '' || ev.status === f.status);

/** The distinct values of one field on the page, sorted, for a filter's choices. */
export const choices = (events: EventItem[], pick: (ev: EventItem) => string): string[] =>
  [...new Set(events.map(pick))].sort();

/**
 * The event that failed first: the lowest `updatedSeq` among failed nodes (the event that set a
 * node's state is its `updatedSeq`), or null when no node failed.
 */
export function firstFailureSeq(nodes: NodeItem[]): number | null {
  const seqs = nodes.filter((n) => n.state === 'failed' && n.updatedSeq !== null).map((n) => n.updatedSeq!);
  return seqs.length === 0 ? null : Math.min(...seqs);
}

/** Time between two events, short: `850 ms`, `4.2 s`, `3 min 5 s`, `2 h 10 min`. */
export function formatGap(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.floor((ms % 60_000) / 1000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.floor((ms % 3_600_000) / 60_000)} min`;
}

/** Each event's time since the one before it on the page (by seq), by seq; the oldest has none. */
export function gapsBySeq(events: EventItem[]): Map<number, number> {
  const ordered = [...events].sort((a, b) => a.seq - b.seq);
  const gaps = new Map<number, number>();
  for (let i = 1; i < ordered.length; i++) {
    const prev = ordered[i - 1]!;
    const ev = ordered[i]!;
    if (ev.seq === prev.seq + 1) gaps.set(ev.seq, Date.parse(ev.ts) - Date.parse(prev.ts));
  }
  return gaps;
}

/**
 * The caption of a page, in the numbers its items carry (`#seq`, the journal position the bridge
 * and its cursors use): `Events #250–#299 of 300`.
 */
export function pageCaption(offset: number, returned: number, total: number): string {
  if (total === 0) return 'No events recorded.';
  if (returned === 0) return `No events on this page (${total} in all)`;
  return `Events #${offset}–#${offset + returned - 1} of ${total}`;
}
