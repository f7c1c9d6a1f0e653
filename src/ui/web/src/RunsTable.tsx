import type { RunSummary } from './api.js';
import { formatAgo, formatTime, label, REVERIFICATION_DUE_TITLE, runFacts } from './format.js';

/** One page of runs; below 700 px each row is a card (styles.css). */
export function RunsTable({ runs, caption }: { runs: RunSummary[]; caption: string }) {
  return (
    <div class="table-wrap">
      <table class="runs cards">
        <caption>{caption}</caption>
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
                  {pending === null ? '—' : pending > 0 ? <strong class="attention">{pending}</strong> : 0}
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
  );
}
