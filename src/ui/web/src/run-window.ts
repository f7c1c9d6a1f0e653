import { getJson, query, type Result, type RunSummary, type RunsBody } from './api.js';

/** The bridge's largest `GET /runs` page (CONTRACT 4: limit 1..50). */
export const LIST_PAGE = 50;
/** Runs the list reads by default: the most recently created ones, 10 pages. */
export const WINDOW = 500;

export interface RunWindow {
  /** The runs read, in creation order. */
  runs: RunSummary[];
  /** Every run the bridge holds. */
  total: number;
}

const totalOf = (headers: Headers, fallback: number): number => {
  const v = Number(headers.get('x-harness-page-total'));
  return Number.isSafeInteger(v) && v >= 0 ? v : fallback;
};

/**
 * The `size` most recently created runs, read through the bridge's paging as it is (creation
 * order, oldest first, so offsets are stable): one summary to learn the total, then the last
 * pages at once. Sorting and filtering are then the browser's, over what was read; the bridge
 * never opens a run for a listing.
 */
export async function loadRunWindow(size: number, signal: AbortSignal): Promise<Result<RunWindow>> {
  const probe = await getJson<RunsBody>(`/runs${query({ limit: 1 })}`, signal);
  if (!probe.ok) return probe;
  const total = totalOf(probe.headers, probe.data.runs.length);
  const from = Math.max(0, total - size);
  const cursors: number[] = [];
  for (let c = from; c < total; c += LIST_PAGE) cursors.push(c);
  const pages = await Promise.all(
    cursors.map((cursor) =>
      getJson<RunsBody>(`/runs${query({ limit: LIST_PAGE, cursor: cursor || null })}`, signal),
    ),
  );
  const runs: RunSummary[] = [];
  const seen = new Set<string>();
  let last = total;
  for (const page of pages) {
    if (!page.ok) return page;
    last = Math.max(last, totalOf(page.headers, last));
    // Runs created between the pages shift nothing (offsets are stable); a run is listed once.
    for (const run of page.data.runs) {
      if (seen.has(run.id)) continue;
      seen.add(run.id);
      runs.push(run);
    }
  }
  return { ok: true, data: { runs, total: last }, headers: probe.headers };
}
