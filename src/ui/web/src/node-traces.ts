import type { EventItem, NodeItem } from './api.js';

/** The events a node's list shows: its newest ones; the rest are counted, and the timeline has them. */
export const NODE_EVENTS_SHOWN = 20;

/** What the lane knows of one node from the events read so far. */
export interface NodeTrace {
  count: number;
  firstTs: string;
  /** Each event's time by journal position, to find when the node's state was last set. */
  tsBySeq: Map<number, string>;
  /** The newest NODE_EVENTS_SHOWN events, oldest first. */
  recent: EventItem[];
}

/** Every node's trace, and the run's first event (a replay's source is on it). */
export interface Traces {
  byNode: Map<string, NodeTrace>;
  first: EventItem | null;
  /** The journal position to read from next. */
  next: number;
}

export const emptyTraces = (): Traces => ({ byNode: new Map(), first: null, next: 0 });

/** Adds events (oldest first, each past `traces.next`) to the traces, in place. */
export function foldTraces(traces: Traces, events: readonly EventItem[]): void {
  for (const ev of events) {
    if (ev.seq < traces.next) continue;
    traces.next = ev.seq + 1;
    if (ev.seq === 0) traces.first = ev;
    let trace = traces.byNode.get(ev.nodeId);
    if (!trace) {
      trace = { count: 0, firstTs: ev.ts, tsBySeq: new Map(), recent: [] };
      traces.byNode.set(ev.nodeId, trace);
    }
    trace.count++;
    trace.tsBySeq.set(ev.seq, ev.ts);
    trace.recent.push(ev);
    if (trace.recent.length > NODE_EVENTS_SHOWN) trace.recent.shift();
  }
}

const SETTLED = new Set(['passed', 'failed', 'skipped']);

/**
 * A node's time spent: from its first event to the event that passed, failed or skipped it (its
 * `updatedSeq`), or to `now` while it is still open. Null when no event of the node was read.
 */
export function timeSpent(
  node: NodeItem,
  trace: NodeTrace | undefined,
  now: number,
): { ms: number; open: boolean } | null {
  if (!trace) return null;
  const start = Date.parse(trace.firstTs);
  if (SETTLED.has(node.state)) {
    const end = node.updatedSeq === null ? undefined : trace.tsBySeq.get(node.updatedSeq);
    return end === undefined ? null : { ms: Date.parse(end) - start, open: false };
  }
  return { ms: now - start, open: true };
}
