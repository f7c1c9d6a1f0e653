import { runEventProblems } from '../contract/event-problems.js';
import { RUN_ID_PATTERN, type RunEvent } from '../contract/index.js';
import { type BridgeCall, refusalLine, SourceError } from './client.js';
import type { RecordedEvent, ReplayInput } from './recorded.js';

/** The largest page GET /runs/:id serves (its `eventLimit` maximum). */
const PAGE = 200;

/** What a page of GET /runs/:id carries of each event beside the event itself (src/server/views.ts). */
const VIEW_ONLY = ['seq', 'claim', 'artifactRootSet', 'adapterPathSet'] as const;

interface RunPage {
  status: string;
  events: Record<string, unknown>[];
  eventPage: { nextCursor: string | null };
}

/**
 * A run the bridge holds, as replay input (source `database`): its events read page by page
 * through GET /runs/:id from the first, as any client reads them, so the bridge authenticates the
 * run on each read (its PostgreSQL rows or its journal) and a source never reaches into storage.
 * Unknown or quarantined (on any page: a run can be quarantined between two reads) is refused
 * before anything is posted; each event is judged against the contract as a JSONL line is.
 */
export async function readRunInput(call: BridgeCall, runId: string): Promise<ReplayInput> {
  if (!RUN_ID_PATTERN.test(runId)) throw new SourceError('--run is not a canonical run ID', 2);
  const at = `/runs/${encodeURIComponent(runId)}`;
  const events: RecordedEvent[] = [];
  let cursor = 0;
  let lastSeq = -1;
  for (;;) {
    const page = await readPage(call, runId, `${at}?eventCursor=${cursor}&eventLimit=${PAGE}`);
    for (const view of page.events) {
      const seq = Number(view['seq']);
      // A page out of journal order would replay another history than the run's.
      if (!Number.isSafeInteger(seq) || seq <= lastSeq)
        throw new SourceError(`run ${runId}: the bridge answered events out of journal order`, 1);
      lastSeq = seq;
      events.push(recordedOf(runId, seq, view));
    }
    const next = page.eventPage.nextCursor === null ? null : Number(page.eventPage.nextCursor);
    if (next === null) break;
    if (!Number.isSafeInteger(next) || next <= cursor)
      throw new SourceError(`run ${runId}: the bridge answered a page cursor that does not move on`, 1);
    cursor = next;
  }
  if (events.length === 0) throw new SourceError(`run ${runId} holds no events`, 2);
  return { source: 'database', events, name: runId };
}

async function readPage(call: BridgeCall, runId: string, path: string): Promise<RunPage> {
  const answer = await call(path, { method: 'GET' });
  if (answer.status !== 200)
    throw new SourceError(`cannot replay run ${runId}, nothing was posted: ${refusalLine(answer)}`, 1);
  const run = answer.body['run'] as RunPage;
  // The bridge no longer vouches for a quarantined run's records: there is nothing to replay.
  if (run.status === 'quarantined')
    throw new SourceError(`run ${runId} is quarantined: its records are not replayed, nothing was posted`, 1);
  return run;
}

/** The event as recorded: the page's view without what the view adds (its seq, claim, flags). */
function recordedOf(runId: string, seq: number, view: Record<string, unknown>): RecordedEvent {
  const event: Record<string, unknown> = { ...view };
  for (const key of VIEW_ONLY) delete event[key];
  const problems = runEventProblems(event);
  if (problems.length > 0)
    throw new SourceError(
      `event ${seq} of run ${runId} is not a contract event, nothing was posted: ${problems.join('; ')}`,
      2,
    );
  return { where: `event ${seq}`, event: event as unknown as RunEvent };
}
