import { type TSchema, Type } from '#typebox';
import type { EventPage, EventViewT, RunSummary } from '../contract/index.js';
import { BridgeError, RESPONSE_MAX_BYTES } from '../contract/index.js';
import { RunIntegrityError } from '../storage/run-files.js';
import type { QuarantineInfo } from '../storage/store.js';
import { completionPreview } from './completion.js';
import type { BridgeContext } from './context.js';
import { reverifyCompleted } from './reverify.js';
import { boundedQuarantine } from './view-bounds.js';
import { eventView, quarantinedSummary, runView, summaryView } from './views.js';

export interface Page {
  offset: number;
  limit: number;
  returned: number;
  total: number;
}

/**
 * The 200 answer of a list endpoint, as its OpenAPI document describes it: `body`, and the page
 * headers pageHeaders sends, for a page size in `limit`.
 */
export function pagedAnswerDoc(description: string, body: TSchema, limit: { min: number; max: number }) {
  const count = (description: string) => Type.Integer({ minimum: 0, description });
  const headers = {
    'x-harness-page-offset': count('Offset of the first item of this page; always sent.'),
    'x-harness-page-limit': Type.Integer({
      minimum: limit.min,
      maximum: limit.max,
      description: 'The page size asked for (or its default); always sent.',
    }),
    'x-harness-page-returned': count('Items in this page; always sent.'),
    'x-harness-page-total': count('Items in all; always sent.'),
    'x-harness-next-cursor': count('The cursor of the next page; sent only while another page exists.'),
  };
  return { description, headers, content: { 'application/json': { schema: body } } };
}

/** The page headers both list endpoints send (CONTRACT 4). */
export function pageHeaders(p: Page): Record<string, string> {
  const headers: Record<string, string> = {
    'x-harness-page-offset': String(p.offset),
    'x-harness-page-limit': String(p.limit),
    'x-harness-page-returned': String(p.returned),
    'x-harness-page-total': String(p.total),
  };
  if (p.offset + p.returned < p.total) headers['x-harness-next-cursor'] = String(p.offset + p.returned);
  return headers;
}

/**
 * GET /runs: summaries in creation order, from the run index (storage/run-index-file.ts): a listing
 * opens only a run whose summary the index does not hold yet. A completed run is listed as its
 * record says, with `reverificationDue`: its evidence is checked again when the run itself is read.
 */
export async function listRuns(
  ctx: BridgeContext,
  offset: number,
  limit: number,
): Promise<{ runs: RunSummary[]; page: Page }> {
  // Storage that failed answers nothing it may not have stored (as every read of a run does then).
  if (ctx.store.failure) throw ctx.store.failure;
  await ctx.store.refresh?.();
  const ids = ctx.store.page(offset, limit);
  const all = await Promise.all(ids.map((id) => summaryOf(ctx, id)));
  const runs = all.filter((r): r is RunSummary => r !== null);
  return { runs, page: { offset, limit, returned: runs.length, total: ctx.store.size } };
}

const listed = (summary: RunSummary): RunSummary => {
  summary.reverificationDue = summary.status === 'completed';
  return summary;
};

function summaryOf(ctx: BridgeContext, runId: string): Promise<RunSummary | null> | RunSummary {
  const indexed = ctx.store.indexedSummary(runId);
  if (indexed !== null) return listed(indexed);
  return ctx.queue.run(runId, () => openedSummary(ctx, runId));
}

async function openedSummary(ctx: BridgeContext, runId: string): Promise<RunSummary | null> {
  const loaded = await ctx.store.load(runId);
  // Gone since the page was taken: a run created for a refused first event is discarded.
  if (loaded.kind === 'missing') return null;
  if (loaded.kind === 'quarantined') return quarantinedSummary(runId, loaded.createdAt, loaded.quarantine);
  try {
    await loaded.run.journal.idle();
    // A failed log write leaves records in memory that no client was told are stored: the list
    // refuses (503 bridge_busy: the bridge is stopping), as every read of a run does then,
    // rather than count them.
    const broken = loaded.run.journal.broken;
    if (broken) throw broken;
    const q = ctx.store.quarantineOf(runId);
    if (q) return quarantinedSummary(runId, loaded.run.config.createdAt, q);
    return listed(summaryView(loaded.run));
  } finally {
    ctx.store.release(loaded.run);
  }
}

/** GET /runs/:id: `{ok, run}`, the run's full view holding one page of events (newest page when no cursor). */
export async function getRun(ctx: BridgeContext, runId: string, limit: number, cursor: number | undefined) {
  const loaded = await ctx.store.load(runId);
  if (loaded.kind === 'missing') throw new BridgeError('run_not_found', 'no run has this ID');
  if (loaded.kind === 'quarantined') return quarantinedRun(runId, loaded.createdAt, loaded.quarantine, limit);
  const open = loaded.run;
  try {
    await open.journal.idle();
    await reverifyCompleted(ctx, open);
    // Quarantined by this read's re-verification: answer as every later read will.
    const q = ctx.store.quarantineOf(runId);
    if (q) return quarantinedRun(runId, open.config.createdAt, q, limit);
    const total = open.journal.count;
    const offset = cursor === undefined ? Math.max(0, total - limit) : Math.min(cursor, total);
    let entries: Awaited<ReturnType<typeof ctx.store.read>>;
    try {
      entries = await ctx.store.read(open, offset, Math.min(total, offset + limit));
    } catch (err) {
      // The page failed re-authentication and the store quarantined the run: answer as every
      // later read will, rather than with a one-off error.
      const quarantine = ctx.store.quarantineOf(runId);
      if (err instanceof RunIntegrityError && quarantine)
        return quarantinedRun(runId, open.config.createdAt, quarantine, limit);
      throw err;
    }
    const view = runView(open, completionPreview(open), ctx.store.quarantineOf(runId));
    const pageOf = (from: number, returned: number): EventPage => ({
      offset: from,
      limit,
      returned,
      total,
      previousCursor: from > 0 ? String(Math.max(0, from - limit)) : null,
      nextCursor: from + returned < total ? String(from + returned) : null,
      truncated: returned < total,
      byteLimited: returned < entries.length,
    });
    const run = { ...view, events: [] as EventViewT[], eventPage: pageOf(offset, entries.length) };
    const body = { ok: true as const, run };
    // Keep the whole body under the response ceiling: the view's growing parts are already
    // bounded (view-bounds.ts), so the page is what is cut. The body is measured with an empty
    // page; the margin covers the page's own figures changing length once it is cut. A page
    // from a cursor keeps its oldest events (nextCursor goes on from the cut); the newest page
    // keeps its newest, so a reader polling it always sees the latest events.
    let budget = RESPONSE_MAX_BYTES - Buffer.byteLength(JSON.stringify(body)) - 4096;
    const fits = (entry: (typeof entries)[number]) => {
      const ev = eventView(entry);
      budget -= Buffer.byteLength(JSON.stringify(ev)) + 1;
      return budget < 0 ? null : ev;
    };
    const newest = cursor === undefined;
    for (let i = 0; i < entries.length; i++) {
      const ev = fits(entries[newest ? entries.length - 1 - i : i] as (typeof entries)[number]);
      if (ev === null) break;
      run.events.push(ev);
    }
    if (newest) run.events.reverse();
    const from = newest ? offset + entries.length - run.events.length : offset;
    run.eventPage = pageOf(from, run.events.length);
    run.eventsTruncated = run.events.length < total;
    return { body, page: run.eventPage };
  } finally {
    ctx.store.release(open);
  }
}

/** A quarantined run: what can be said without trusting its record or its drifted artifacts. */
function quarantinedRun(runId: string, createdAt: string, quarantine: QuarantineInfo, limit: number) {
  const eventPage: EventPage = {
    offset: 0,
    limit,
    returned: 0,
    total: 0,
    previousCursor: null,
    nextCursor: null,
    truncated: false,
    byteLimited: false,
  };
  const run = {
    ...quarantinedSummary(runId, createdAt, quarantine),
    quarantine: boundedQuarantine(quarantine),
    events: [] as EventViewT[],
    eventPage,
  };
  return { body: { ok: true as const, run }, page: eventPage };
}
