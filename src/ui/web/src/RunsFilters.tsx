import { label } from './format.js';
import {
  type QuarantineFilter,
  RUN_MODES,
  RUN_STATUSES,
  type RunMode,
  type RunStatus,
  type RunsQuery,
  runsHash,
} from './runs-triage.js';

/** A change of view is a change of URL, so the back button and a shared link both reproduce it. */
const go = (q: RunsQuery) => {
  location.hash = runsHash(q);
};

/** A labelled select whose options are `[value, text]` pairs. */
function Choice(props: {
  name: string;
  text: string;
  value: string;
  options: readonly (readonly [string, string])[];
  pick: (value: string) => void;
}) {
  return (
    <label>
      {props.text}{' '}
      <select name={props.name} value={props.value} onChange={(e) => props.pick(e.currentTarget.value)}>
        {props.options.map(([value, text]) => (
          <option key={value} value={value}>
            {text}
          </option>
        ))}
      </select>
    </label>
  );
}

/** The sort switch, the counts per status (each a link to that status) and the filters. */
export function RunsFilters({ q, counts }: { q: RunsQuery; counts: Record<RunStatus, number> }) {
  const set = (change: Partial<RunsQuery>) => go({ ...q, ...change, page: 1 });
  return (
    <div class="runs-controls">
      <nav class="sort-switch" aria-label="Sort runs">
        <span>Sort, newest first:</span>
        {(['updated', 'created'] as const).map((sort) => (
          <a
            key={sort}
            href={runsHash({ ...q, sort, page: 1 })}
            aria-current={q.sort === sort ? 'true' : undefined}
          >
            {sort === 'updated' ? 'Last update' : 'Created'}
          </a>
        ))}
      </nav>
      <ul class="status-counts" aria-label="Runs per status">
        {RUN_STATUSES.map((s) => (
          <li key={s} data-status={s}>
            <a
              href={runsHash({ ...q, status: s, page: 1 })}
              aria-current={q.status === s ? 'true' : undefined}
            >
              <span class={`badge s-${s}`}>{label(s)}</span> <span class="count">{counts[s]}</span>
            </a>
          </li>
        ))}
      </ul>
      <form class="filters" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <Choice
          name="status"
          text="Status"
          value={q.status ?? ''}
          options={[['', 'any'], ...RUN_STATUSES.map((s) => [s, `${label(s)} (${counts[s]})`] as const)]}
          pick={(v) => set({ status: (v || null) as RunStatus | null })}
        />
        <Choice
          name="mode"
          text="Mode"
          value={q.mode ?? ''}
          options={[['', 'any'], ...RUN_MODES.map((m) => [m, m] as const)]}
          pick={(v) => set({ mode: (v || null) as RunMode | null })}
        />
        <label>
          <input
            type="checkbox"
            name="pending"
            checked={q.pending}
            onChange={(e) => set({ pending: e.currentTarget.checked })}
          />{' '}
          Has a pending approval
        </label>
        <Choice
          name="quarantined"
          text="Quarantined"
          value={q.quarantined}
          options={[
            ['any', 'included'],
            ['only', 'only'],
            ['hide', 'hidden'],
          ]}
          pick={(v) => set({ quarantined: v as QuarantineFilter })}
        />
        <a href="#/">Clear</a>
      </form>
    </div>
  );
}
