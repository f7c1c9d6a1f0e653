import { useState } from 'preact/hooks';
import { getJson, query, type RunsBody } from './api.js';
import { BridgeStatus } from './BridgeStatus.js';
import { formatAgo, formatTime, label, REVERIFICATION_DUE_TITLE, runFacts } from './format.js';
import { usePoll } from './hooks.js';
import { RunsNeedYou } from './NeedsYou.js';
import { loadRunWindow, WINDOW } from './run-window.js';

const PAGE = 25;

export function RunsList() {
  const [cursor, setCursor] = useState(0);
  const polled = usePoll(`runs:${cursor}`, (signal) =>
    getJson<RunsBody>(`/runs${query({ limit: PAGE, cursor: cursor || null })}`, signal),
  );
  const windowRuns = usePoll('runs:window', (signal) => loadRunWindow(WINDOW, signal));
  document.title = 'Runs · Harness';
  const runs = polled.data?.runs ?? [];
  const total = Number(polled.headers?.get('x-harness-page-total') ?? runs.length);
  const next = polled.headers?.get('x-harness-next-cursor') ?? null;
  return (
    <section aria-labelledby="runs-heading">
      <h1 id="runs-heading">Runs</h1>
      <BridgeStatus problem={polled.problem} at={polled.at} />
      <RunsNeedYou runs={windowRuns.data?.runs ?? []} />
      {polled.data && runs.length === 0 && <p>No runs yet. Runs appear here as agents post events.</p>}
      {runs.length > 0 && (
        <div class="table-wrap">
          <table class="runs">
            <caption>
              Runs {cursor + 1}–{cursor + runs.length} of {total}, oldest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col">Mode</th>
                <th scope="col">Current node</th>
                <th scope="col">Events</th>
                <th scope="col">Pending approvals</th>
                <th scope="col">Last update</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((run) => {
                const facts = runFacts(run);
                const pending = facts.pendingApprovals;
                return (
                  <tr key={run.id} data-run-id={run.id}>
                    <th scope="row">
                      <a href={`#/runs/${encodeURIComponent(run.id)}`}>{run.id}</a>
                      {run.title && <div class="muted">{run.title}</div>}
                    </th>
                    <td data-label="Status">
                      <span class={`badge s-${run.status}`}>{label(run.status)}</span>
                      {run.reverificationDue && (
                        <div class="muted" title={REVERIFICATION_DUE_TITLE}>
                          as recorded; re-verified when opened
                        </div>
                      )}
                    </td>
                    <td data-label="Mode">{run.runMode ?? '—'}</td>
                    <td data-label="Current node">{facts.currentNode}</td>
                    <td data-label="Events" class="num">
                      {facts.events}
                    </td>
                    <td data-label="Pending approvals" class="num">
                      {pending === null ? (
                        '—'
                      ) : pending > 0 ? (
                        <strong class="attention">{pending}</strong>
                      ) : (
                        0
                      )}
                    </td>
                    <td data-label="Last update">
                      {facts.updatedAt === null ? (
                        '—'
                      ) : (
                        <time dateTime={facts.updatedAt} title={formatTime(facts.updatedAt)}>
                          {formatAgo(facts.updatedAt)}
                        </time>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <nav class="pager" aria-label="Runs pages">
        <button type="button" disabled={cursor === 0} onClick={() => setCursor(Math.max(0, cursor - PAGE))}>
          Previous runs
        </button>
        <button
          type="button"
          disabled={next === null}
          onClick={() => next !== null && setCursor(Number(next))}
        >
          Next runs
        </button>
      </nav>
    </section>
  );
}
