import { useEffect, useRef, useState } from 'preact/hooks';
import { getJson, query, type RunDetail, type RunPageBody, type RunSummary } from './api.js';

/** Runs the "Needs you" band opens at most: its requests stay bounded however many runs wait. */
export const BAND_RUNS = 20;
/** Of the running runs without a pending approval, the most recently active ones checked for failed nodes. */
export const ACTIVE_CHECKED = 10;

/** What a listed run's summary says changed since its view was read. */
const versionOf = (r: RunSummary) => `${r.status}|${r.eventCount}|${r.updatedAt}|${r.pendingApprovals}`;

const newestFirst = (a: RunSummary, b: RunSummary) =>
  a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0;

/**
 * The runs whose views the band reads: every run with a pending approval or a refused completion
 * (the summary says so), then the most recently active running ones, whose failed nodes only
 * their views show; newest activity first, BAND_RUNS at most.
 */
export function bandCandidates(runs: RunSummary[]): RunSummary[] {
  const flagged = runs.filter((r) => r.pendingApprovals > 0 || r.status === 'blocked').sort(newestFirst);
  const active = runs
    .filter((r) => r.status === 'running' && r.pendingApprovals === 0)
    .sort(newestFirst)
    .slice(0, ACTIVE_CHECKED);
  return [...flagged, ...active].slice(0, BAND_RUNS);
}

/**
 * The views of `runs`, each read again only when its summary changed (status, event count, last
 * update or pending approvals), so the band costs nothing while the runs stand still.
 */
export function useRunDetails(runs: RunSummary[]): ReadonlyMap<string, RunDetail> {
  const [details, setDetails] = useState<ReadonlyMap<string, RunDetail>>(new Map());
  const read = useRef(new Map<string, string>());
  const key = runs.map((r) => `${r.id}=${versionOf(r)}`).join('\n');
  useEffect(() => {
    const abort = new AbortController();
    const stale = runs.filter((r) => read.current.get(r.id) !== versionOf(r));
    void Promise.all(
      stale.map(async (r) => {
        const got = await getJson<RunPageBody>(
          `/runs/${encodeURIComponent(r.id)}${query({ eventLimit: 1 })}`,
          abort.signal,
        ).catch(() => null);
        return got?.ok ? { version: versionOf(r), view: got.data.run } : null;
      }),
    ).then((views) => {
      if (abort.signal.aborted) return;
      for (const v of views) if (v) read.current.set(v.view.id, v.version);
      setDetails((prev) => {
        const next = new Map<string, RunDetail>();
        for (const r of runs) {
          const view = views.find((v) => v?.view.id === r.id)?.view ?? prev.get(r.id);
          if (view) next.set(r.id, view);
        }
        return next;
      });
    });
    return () => abort.abort();
  }, [key]);
  return details;
}
