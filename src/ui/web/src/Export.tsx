import { useState } from 'preact/hooks';
import { type EventItem, type EventPage, getJson, query, type Result, type RunPageBody } from './api.js';

/** The bridge's largest event page (CONTRACT 4: eventLimit 1..200). */
const EXPORT_PAGE = 200;

/**
 * Every event of the run, oldest first, read through the proxy page by page from the first
 * (offsets are journal positions and the journal only grows, so pages never shift), and the
 * run's view as the bridge answers it. Reads only: the export opens no write path.
 */
export async function readExport(
  runId: string,
  signal: AbortSignal,
): Promise<Result<{ view: RunPageBody; events: EventItem[] }>> {
  const path = `/runs/${encodeURIComponent(runId)}`;
  const view = await getJson<RunPageBody>(path, signal);
  if (!view.ok) return view;
  const bySeq = new Map<number, EventItem>();
  let cursor: number | null = 0;
  while (cursor !== null) {
    const page: Result<RunPageBody> = await getJson<RunPageBody>(
      `${path}${query({ eventLimit: EXPORT_PAGE, eventCursor: cursor })}`,
      signal,
    );
    if (!page.ok) return page;
    for (const e of page.data.run.events) bySeq.set(e.seq, e);
    const { nextCursor, returned }: EventPage = page.data.run.eventPage;
    // A page that returns nothing cannot move the cursor: stop rather than ask again forever.
    cursor = nextCursor === null || returned === 0 ? null : Number(nextCursor);
  }
  const events = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  return { ok: true, data: { view: view.data, events }, headers: view.headers };
}

/** One event a line (JSON Lines), each line the event as the bridge's view gives it. */
export const toJsonl = (events: readonly EventItem[]): string =>
  events.map((e) => `${JSON.stringify(e)}\n`).join('');

function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

/** Downloads the run's events as `<id>.events.jsonl` and its view as `<id>.view.json`. */
export function ExportRun({ runId }: { runId: string }) {
  const [state, setState] = useState<string>('');
  const run = async () => {
    setState('Exporting…');
    const result = await readExport(runId, new AbortController().signal);
    if (!result.ok) {
      setState(`Export failed: ${result.problem.code}: ${result.problem.message}`);
      return;
    }
    download(`${runId}.events.jsonl`, 'application/x-ndjson', toJsonl(result.data.events));
    download(`${runId}.view.json`, 'application/json', `${JSON.stringify(result.data.view, null, 2)}\n`);
    const n = result.data.events.length;
    setState(`Exported ${n} event${n === 1 ? '' : 's'} and the run's view.`);
  };
  return (
    <p class="export">
      <button type="button" onClick={run} disabled={state === 'Exporting…'}>
        Export events (JSONL) and view (JSON)
      </button>{' '}
      <span aria-live="polite" data-export-state>
        {state}
      </span>
    </p>
  );
}
