import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { EventItem, EventPage } from './api.js';
import { Digest } from './Digest.js';
import {
  choices,
  type EventFilter,
  formatGap,
  gapsBySeq,
  matches,
  NO_FILTER,
  pageCaption,
} from './event-scan.js';
import { formatAgo, formatTime, label } from './format.js';

export const EVENT_PAGE = 50;

export interface PageRequest {
  cursor: number;
  limit: number;
}

/**
 * The page just before `page`, sized so it ends where `page` starts (the bridge's previousCursor
 * is offset - limit, which would overlap when offset < limit).
 */
export function olderPage(page: EventPage): PageRequest | null {
  if (page.previousCursor === null || page.offset === 0) return null;
  const cursor = Number(page.previousCursor);
  return { cursor, limit: Math.max(1, Math.min(EVENT_PAGE, page.offset - cursor)) };
}

/** The page after `page`, or null (live newest page) once it would reach the end. */
export function newerPage(page: EventPage): PageRequest | null {
  if (page.nextCursor === null) return null;
  const cursor = Number(page.nextCursor);
  return cursor + EVENT_PAGE >= page.total ? null : { cursor, limit: EVENT_PAGE };
}

interface Props {
  events: EventItem[];
  page: EventPage;
  /** An older page is pinned; otherwise the newest page is shown live. */
  pinned: boolean;
  onPage(next: PageRequest | null): void;
  /** The event that failed first in the run (firstFailureSeq), if any. */
  firstFailure: number | null;
}

function Pager({ page, pinned, onPage, where }: Omit<Props, 'events' | 'firstFailure'> & { where: string }) {
  const older = olderPage(page);
  return (
    <nav class="pager" aria-label={`Event pages, ${where}`}>
      <button type="button" disabled={!pinned} onClick={() => onPage(null)}>
        Newest events
      </button>
      <button type="button" disabled={!pinned} onClick={() => onPage(newerPage(page))}>
        Newer events
      </button>
      <button type="button" disabled={older === null} onClick={() => older && onPage(older)}>
        Older events
      </button>
    </nav>
  );
}

function Select({
  label: text,
  value,
  options,
  onChange,
}: {
  label: string;
  value: string;
  options: string[];
  onChange(v: string): void;
}) {
  return (
    <label>
      {text}{' '}
      <select
        name={text.toLowerCase()}
        value={value}
        onChange={(e) => onChange((e.currentTarget as HTMLSelectElement).value)}
      >
        <option value="">all</option>
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

/**
 * Events newest first, with filters over the page, the time since the event before, a jump to the
 * run's first failure, and pagers above and below; older pages on demand, then back to live.
 */
export function Timeline({ events, page, pinned, onPage, firstFailure }: Props) {
  const [filter, setFilter] = useState<EventFilter>(NO_FILTER);
  const [focus, setFocus] = useState<number | null>(null);
  const list = useRef<HTMLOListElement>(null);
  useEffect(() => {
    if (focus === null) return;
    const item = list.current?.querySelector<HTMLElement>(`li[data-seq="${focus}"]`);
    if (!item) return;
    item.scrollIntoView({ block: 'center' });
    item.focus();
    setFocus(null);
  }, [focus, events]);
  const gaps = gapsBySeq(events);
  const shown = [...events].reverse().filter((ev) => matches(ev, filter));
  const filtered = filter.type !== '' || filter.node !== '' || filter.status !== '';
  const jump = () => {
    if (firstFailure === null) return;
    setFilter(NO_FILTER);
    setFocus(firstFailure);
    if (!events.some((ev) => ev.seq === firstFailure)) onPage({ cursor: firstFailure, limit: EVENT_PAGE });
  };
  return (
    <section aria-labelledby="events-heading">
      <h2 id="events-heading">Events</h2>
      <p class="muted" aria-live="polite">
        {pageCaption(page.offset, page.returned, page.total)}
        {page.total > 0 && `, newest first${pinned ? ' (older page)' : ' (live)'}`}
        {page.byteLimited ? '; this page was cut to stay under the response size limit' : ''}
      </p>
      <div class="event-tools">
        <Select
          label="Type"
          value={filter.type}
          options={choices(events, (ev) => ev.type)}
          onChange={(type) => setFilter({ ...filter, type })}
        />
        <Select
          label="Node"
          value={filter.node}
          options={choices(events, (ev) => ev.nodeId)}
          onChange={(node) => setFilter({ ...filter, node })}
        />
        <Select
          label="Status"
          value={filter.status}
          options={choices(events, (ev) => ev.status)}
          onChange={(status) => setFilter({ ...filter, status })}
        />
        {firstFailure !== null && (
          <button type="button" onClick={jump}>
            Jump to first failure (#{firstFailure})
          </button>
        )}
      </div>
      {filtered && (
        <p class="muted" data-filter-note>
          {shown.length} of this page's {events.length} events match the filters.
        </p>
      )}
      <Pager page={page} pinned={pinned} onPage={onPage} where="top" />
      <ol class="timeline" ref={list}>
        {shown.map((ev) => {
          const gap = gaps.get(ev.seq);
          return (
            <li key={ev.seq} class={`event st-${ev.status}`} data-seq={ev.seq} tabIndex={-1}>
              <div class="event-head">
                <span class="seq">#{ev.seq}</span>
                <code class="etype">{ev.type}</code>
                <span class="enode">{ev.nodeId}</span>
                <span class={`badge st-${ev.status}`}>{label(ev.status)}</span>
                <time dateTime={ev.ts} title={formatTime(ev.ts)}>
                  {formatAgo(ev.ts)}
                </time>
                {gap !== undefined && (
                  <span class="gap" title={`${formatGap(gap)} after event #${ev.seq - 1}`}>
                    +{formatGap(gap)}
                  </span>
                )}
                <span class="muted">
                  {ev.actor} · {ev.eventSource}
                </span>
              </div>
              <p class="emsg">{ev.message}</p>
              <EventDetails ev={ev} />
            </li>
          );
        })}
      </ol>
      <Pager page={page} pinned={pinned} onPage={onPage} where="bottom" />
    </section>
  );
}

function EventDetails({ ev }: { ev: EventItem }) {
  const rows: [string, ComponentChildren][] = [];
  if (ev.nodeState) rows.push(['node state', label(ev.nodeState)]);
  if (ev.skipReason) rows.push(['skip reason', ev.skipReason]);
  if (ev.failureReason) rows.push(['failure', ev.failureReason]);
  if (ev.recoveryPath) rows.push(['recovery', ev.recoveryPath]);
  if (ev.approvalOwner) rows.push(['approval owner', ev.approvalOwner]);
  if (ev.approvalScope) rows.push(['approval scope', ev.approvalScope]);
  if (ev.artifact) rows.push(['artifact', ev.artifact]);
  if (ev.claim) rows.push(['sha256', <Digest value={ev.claim.sha256} />]);
  // Rendered as text, never as a link: the URL is agent-supplied.
  if (ev.selfHealPrUrl) rows.push(['self-heal PR', ev.selfHealPrUrl]);
  if (rows.length === 0) return null;
  return (
    <dl class="edetails">
      {rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}
