import type { EventPage, EventViewT, RunSummary, RunViewT } from '../../../contract/views.js';

/** The bridge's largest event page (CONTRACT 4: eventLimit 1..200). */
export const LARGEST_EVENT_PAGE = 200;

export type { EventPage, RunSummary };
export type EventItem = EventViewT;
export type NodeItem = RunViewT['nodes'][number];
export type ApprovalItem = RunViewT['approvals'][number];
export type ArtifactItem = RunViewT['artifacts'][number];
/**
 * A run read by ID, with one page of its events inside it (CONTRACT 4: the body is `{ok, run}`).
 * A run whose record failed authentication comes back as its summary plus `quarantine` and an
 * empty page only (the bridge cannot derive the rest from untrusted state), so every other part
 * beyond the summary is optional here.
 */
export type RunDetail = RunSummary &
  Partial<Omit<RunViewT, keyof RunSummary>> & { events: EventItem[]; eventPage: EventPage };
export interface RunPageBody {
  ok: true;
  run: RunDetail;
}
export interface RunsBody {
  ok: true;
  runs: RunSummary[];
}

/** A failure the operator must see: `lost` means the bridge (or the proxy's path to it) is gone. */
export interface Problem {
  lost: boolean;
  status: number | null;
  code: string;
  message: string;
  problems: string[];
}

export type Result<T> = { ok: true; data: T; headers: Headers } | { ok: false; problem: Problem };

const NETWORK: Problem = {
  lost: true,
  status: null,
  code: 'network_error',
  message: 'The UI server could not be reached',
  problems: [],
};

/**
 * Reads go to the same-origin proxy only. The browser holds no credential: the UI server injects
 * the access token, and `credentials: 'omit'` keeps even cookies out of the request.
 */
export async function getJson<T>(path: string, signal: AbortSignal): Promise<Result<T>> {
  let res: Response;
  try {
    res = await fetch(`/api/bridge${path}`, {
      signal,
      credentials: 'omit',
      headers: { accept: 'application/json' },
    });
  } catch (err) {
    if (signal.aborted) throw err;
    return { ok: false, problem: NETWORK };
  }
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (res.ok && body !== null) return { ok: true, data: body as T, headers: res.headers };
  const envelope = (body ?? {}) as Partial<{ error: unknown; message: unknown; problems: unknown }>;
  return {
    ok: false,
    problem: {
      lost: res.status === 502 || res.status === 504 || body === null,
      status: res.status,
      code: typeof envelope.error === 'string' ? envelope.error : `http_${res.status}`,
      message:
        typeof envelope.message === 'string' ? envelope.message : 'Unexpected response from the UI server',
      problems: Array.isArray(envelope.problems) ? envelope.problems.map(String) : [],
    },
  };
}

export function query(params: Record<string, number | string | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/**
 * A run's events from journal position `from` to the end, oldest first, read through the proxy
 * page by page (offsets are journal positions and the journal only grows, so pages never shift);
 * each page is handed to `onPage` as it arrives, so a reader stopped half-way keeps what it got.
 */
export async function readEventPages(
  runId: string,
  from: number,
  signal: AbortSignal,
  onPage: (events: EventItem[]) => void,
): Promise<Result<null>> {
  let cursor: number | null = from;
  while (cursor !== null) {
    const page: Result<RunPageBody> = await getJson<RunPageBody>(
      `/runs/${encodeURIComponent(runId)}${query({ eventLimit: LARGEST_EVENT_PAGE, eventCursor: cursor })}`,
      signal,
    );
    if (!page.ok) return page;
    onPage([...page.data.run.events].sort((a, b) => a.seq - b.seq));
    const { nextCursor, returned }: EventPage = page.data.run.eventPage;
    // A page that returns nothing cannot move the cursor: stop rather than ask again forever.
    cursor = nextCursor === null || returned === 0 ? null : Number(nextCursor);
  }
  return { ok: true, data: null, headers: new Headers() };
}
