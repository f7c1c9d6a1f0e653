import { BridgeStatus } from './BridgeStatus.js';
import { usePoll } from './hooks.js';
import { RunsNeedYou } from './NeedsYou.js';
import { OpenRun } from './OpenRun.js';
import { RunsFilters } from './RunsFilters.js';
import { RunsTable } from './RunsTable.js';
import { loadRunWindow, WINDOW } from './run-window.js';
import { parseRunsQuery, runsHash, statusCounts, triageRuns } from './runs-triage.js';

const PAGE = 25;

/**
 * The runs list for triage. It reads the WINDOW most recently created runs (the bridge pages in
 * creation order and opens no run for a listing) and sorts and filters them here: the view is in
 * the URL (`search`), so a link reproduces it.
 */
export function RunsList({ search }: { search: string }) {
  const polled = usePoll('runs:window', (signal) => loadRunWindow(WINDOW, signal));
  document.title = 'Runs · Harness';
  const q = parseRunsQuery(search);
  const all = polled.data?.runs ?? [];
  const total = polled.data?.total ?? 0;
  const shown = triageRuns(all, q);
  const pages = Math.max(1, Math.ceil(shown.length / PAGE));
  const page = Math.min(q.page, pages);
  const from = (page - 1) * PAGE;
  const rows = shown.slice(from, from + PAGE);
  const filtered = shown.length !== all.length;
  const order = q.sort === 'updated' ? 'newest activity first' : 'newest created first';
  return (
    <section aria-labelledby="runs-heading">
      <h1 id="runs-heading">Runs</h1>
      <BridgeStatus problem={polled.problem} at={polled.at} />
      <RunsNeedYou runs={all} />
      {polled.data && all.length === 0 && <p>No runs yet. Runs appear here as agents post events.</p>}
      <OpenRun />
      {all.length > 0 && <RunsFilters q={q} counts={statusCounts(all)} />}
      {total > all.length && (
        <p class="muted" data-window-note>
          Sorted, filtered and counted in this browser over the {all.length} most recently created of {total}{' '}
          runs; open an older run by its ID above.
        </p>
      )}
      {all.length > 0 && rows.length === 0 && (
        <p>
          No run matches these filters. <a href="#/">Clear the filters</a>
        </p>
      )}
      {rows.length > 0 && (
        <RunsTable
          runs={rows}
          caption={`Runs ${from + 1}–${from + rows.length} of ${shown.length}${filtered ? ' matching' : ''}, ${order}`}
        />
      )}
      <nav class="pager" aria-label="Runs pages">
        <button
          type="button"
          disabled={page <= 1}
          onClick={() => {
            location.hash = runsHash({ ...q, page: page - 1 });
          }}
        >
          Previous runs
        </button>
        <button
          type="button"
          disabled={page >= pages}
          onClick={() => {
            location.hash = runsHash({ ...q, page: page + 1 });
          }}
        >
          Next runs
        </button>
      </nav>
    </section>
  );
}
