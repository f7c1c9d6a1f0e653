import { useEffect, useRef, useState } from 'preact/hooks';
import { type Problem, type Result, readEventPages } from './api.js';
import { emptyTraces, foldTraces, type Traces } from './node-traces.js';

export const POLL_MS = 2000;

export interface Polled<T> {
  /** The last good answer, kept while the bridge is lost so the operator still sees it. */
  data: T | null;
  headers: Headers | null;
  problem: Problem | null;
  /** When `data` was received. */
  at: Date | null;
}

/**
 * Polls `load` every 2 s while the tab is visible. A hidden tab makes no requests; becoming
 * visible again polls at once. `key` restarts polling (another page of the same thing): the last
 * answer stays on screen until the new one arrives, so nothing blanks and the scroll position
 * holds. Another thing altogether (another run) is another component instance, with no data.
 */
export function usePoll<T>(key: string, load: (signal: AbortSignal) => Promise<Result<T>>): Polled<T> {
  const [state, setState] = useState<Polled<T>>({ data: null, headers: null, problem: null, at: null });
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let inFlight: AbortController | null = null;
    let stopped = false;

    const tick = async () => {
      timer = undefined;
      if (stopped || document.hidden || inFlight) return;
      inFlight = new AbortController();
      try {
        const result = await loadRef.current(inFlight.signal);
        if (stopped) return;
        setState((prev) =>
          result.ok
            ? { data: result.data, headers: result.headers, problem: null, at: new Date() }
            : { ...prev, problem: result.problem },
        );
      } catch {
        // Aborted by unmount or key change: nothing to report.
      } finally {
        inFlight = null;
      }
      if (!stopped && !document.hidden) timer = setTimeout(tick, POLL_MS);
    };
    const onVisibility = () => {
      if (document.hidden) {
        clearTimeout(timer);
        timer = undefined;
      } else if (timer === undefined) void tick();
    };
    document.addEventListener('visibilitychange', onVisibility);
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
      inFlight?.abort();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [key]);
  return state;
}

/** `#/runs/<id>`, or the runs list with its view in the query (`#/?sort=created`); anything else is the list. */
export type Route = { page: 'runs'; search: string } | { page: 'run'; id: string };

export function parseHash(hash: string): Route {
  const m = /^#\/runs\/([^/?#]+)$/.exec(hash);
  if (m?.[1]) {
    try {
      return { page: 'run', id: decodeURIComponent(m[1]) };
    } catch {
      return { page: 'runs', search: '' };
    }
  }
  const q = /^#\/\?(.*)$/.exec(hash);
  return { page: 'runs', search: q?.[1] ?? '' };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const onHash = () => setRoute(parseHash(location.hash));
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  return route;
}

/**
 * The traces of a run's nodes, read through the proxy from the first event and then only the
 * events past the last one read, whenever a poll (`polledAt`) finds the run's event count ahead of
 * them: so a failed read is tried again at the polling pace, never in a loop. A read in flight is
 * not abandoned for a newer count (the pages it got are kept); it is aborted when the page goes.
 */
export function useNodeTraces(
  runId: string,
  eventCount: number,
  enabled: boolean,
  polledAt: number | undefined,
): Traces {
  const traces = useRef<Traces>(emptyTraces());
  const reading = useRef(false);
  const [, setVersion] = useState(0);
  const abort = useRef(new AbortController());
  useEffect(() => () => abort.current.abort(), []);
  useEffect(() => {
    if (!enabled || reading.current || traces.current.next >= eventCount) return;
    reading.current = true;
    void readEventPages(runId, traces.current.next, abort.current.signal, (events) => {
      foldTraces(traces.current, events);
      setVersion((v) => v + 1);
    })
      .catch(() => null)
      .finally(() => {
        reading.current = false;
      });
  }, [runId, eventCount, enabled, polledAt]);
  return traces.current;
}
