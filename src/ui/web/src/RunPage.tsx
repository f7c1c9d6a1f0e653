import { useState } from 'preact/hooks';
import { Approvals } from './Approvals.js';
import { getJson, query, type RunPageBody } from './api.js';
import { BridgeStatus } from './BridgeStatus.js';
import { Artifacts, Completion, Quarantine } from './Details.js';
import { ExportRun } from './Export.js';
import { firstFailureSeq } from './event-scan.js';
import { formatTime, label, QUARANTINED_EVENTS_NOTE, runFacts, textsShortenedNote } from './format.js';
import { useNodeTraces, usePoll } from './hooks.js';
import { RunNeedsYou } from './NeedsYou.js';
import { NodeLane } from './NodeLane.js';
import { EVENT_PAGE, type PageRequest, Timeline } from './Timeline.js';

/** One run: polled as a whole; `page` pins an older event page while the rest stays live. */
export function RunPage({ runId }: { runId: string }) {
  const [page, setPage] = useState<PageRequest | null>(null);
  const params = page ? { eventLimit: page.limit, eventCursor: page.cursor } : { eventLimit: EVENT_PAGE };
  const polled = usePoll(`run:${runId}:${page?.cursor ?? 'live'}:${page?.limit ?? ''}`, (signal) =>
    getJson<RunPageBody>(`/runs/${encodeURIComponent(runId)}${query(params)}`, signal),
  );
  document.title = `${runId} · Harness`;
  const run = polled.data?.run;
  const facts = run && runFacts(run);
  const traced = run !== undefined && run.status !== 'quarantined';
  const traces = useNodeTraces(runId, traced ? run.eventCount : 0, traced, polled.at?.getTime());
  const source = traces.first?.eventSource ?? run?.events.at(-1)?.eventSource;
  return (
    <article aria-labelledby="run-heading">
      <p>
        <a href="#/">← All runs</a>
      </p>
      <h1 id="run-heading">
        Run <code>{runId}</code>
      </h1>
      {run?.runMode === 'replay' && (
        <p class="mode-note" data-mode-note="replay">
          <strong>Replay:</strong> this run's events were replayed from{' '}
          {source ? <code>{source}</code> : 'a recorded source'}, not recorded live.
        </p>
      )}
      {run?.runMode === 'blueprint' && (
        <p class="mode-note" data-mode-note="blueprint">
          <strong>Blueprint:</strong> this run describes the flow's static topology, not live progress.
        </p>
      )}
      <BridgeStatus problem={polled.problem} at={polled.at} />
      {run && facts && (
        <>
          <RunNeedsYou run={run} />
          <Quarantine run={run} />
          <dl class="facts">
            <div>
              <dt>Status</dt>
              <dd>
                <span class={`badge s-${run.status}`}>{label(run.status)}</span>
              </dd>
            </div>
            {run.title && (
              <div>
                <dt>Title</dt>
                <dd>{run.title}</dd>
              </div>
            )}
            <div>
              <dt>Mode</dt>
              <dd>{run.runMode ?? '—'}</dd>
            </div>
            <div>
              <dt>Current node</dt>
              <dd>{facts.currentNode}</dd>
            </div>
            <div>
              <dt>Events</dt>
              <dd>{facts.events}</dd>
            </div>
            <div>
              <dt>Commissioned</dt>
              <dd>{facts.commissioned}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{formatTime(run.createdAt)}</dd>
            </div>
            <div>
              <dt>Last update</dt>
              <dd>{formatTime(facts.updatedAt)}</dd>
            </div>
          </dl>
          <ExportRun runId={run.id} />
          <Completion run={run} />
          {(run.textsShortened ?? 0) > 0 && (
            <p class="muted" role="note" data-texts-shortened={run.textsShortened}>
              {textsShortenedNote(run.textsShortened ?? 0)}
            </p>
          )}
          {run.nodes && (
            <NodeLane
              nodes={run.nodes}
              current={run.currentNodeId}
              blueprint={run.runMode === 'blueprint'}
              traces={traces}
            />
          )}
          {run.approvals && (
            <Approvals
              runId={run.id}
              approvals={run.approvals}
              omitted={run.approvalsOmitted ?? 0}
              pendingTotal={run.pendingApprovals}
            />
          )}
          {run.artifacts && <Artifacts artifacts={run.artifacts} nodes={run.nodes ?? []} />}
          {run.status === 'quarantined' ? (
            <section aria-labelledby="events-heading">
              <h2 id="events-heading">Events</h2>
              <p class="muted">{QUARANTINED_EVENTS_NOTE}</p>
            </section>
          ) : (
            <Timeline
              events={run.events}
              page={run.eventPage}
              pinned={page !== null}
              onPage={setPage}
              firstFailure={firstFailureSeq(run.nodes ?? [])}
            />
          )}
        </>
      )}
    </article>
  );
}
