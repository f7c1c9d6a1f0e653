import { useState } from 'preact/hooks';
import { type EventItem, getJson, type Result, type RunPageBody, readEventPages } from './api.js';

/**
 * Every event of the run, oldest first, read through the proxy page by page from the first, and
 * the run's view as the bridge answers it. Reads only: the export opens no write path.
 */
export async function readExport(
  runId: string,
  signal: AbortSignal,
): Promise<Result<{ view: RunPageBody; events: EventItem[] }>> {
  const view = await getJson<RunPageBody>(`/runs/${encodeURIComponent(runId)}`, signal);
  if (!view.ok) return view;
  const bySeq = new Map<number, EventItem>();
  const read = await readEventPages(runId, 0, signal, (events) => {
    for (const e of events) bySeq.set(e.seq, e);
  });
  if (!read.ok) return read;
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
