import type { EventItem, EventPage } from './api.js';
import { formatTime, label } from './format.js';

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
}

/** Events newest first; older pages on demand, then back to the live newest page. */
export function Timeline({ events, page, pinned, onPage }: Props) {
  const older = olderPage(page);
  const first = page.returned === 0 ? 0 : page.offset + 1;
  return (
    <section aria-labelledby="events-heading">
      <h2 id="events-heading">Events</h2>
      <p class="muted" aria-live="polite">
        {page.total === 0
          ? 'No events recorded.'
          : `Events ${first}–${page.offset + page.returned} of ${page.total}, newest first${pinned ? ' (older page)' : ' (live)'}`}
        {page.byteLimited ? '; this page was cut to stay under the response size limit' : ''}
      </p>
      <nav class="pager" aria-label="Event pages">
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
      <ol class="timeline" reversed start={page.offset + page.returned}>
        {[...events].reverse().map((ev) => (
          <li key={ev.seq} class={`event st-${ev.status}`} data-seq={ev.seq}>
            <div class="event-head">
              <span class="seq">#{ev.seq}</span>
              <code class="etype">{ev.type}</code>
              <span class="enode">{ev.nodeId}</span>
              <span class={`badge st-${ev.status}`}>{label(ev.status)}</span>
              <time dateTime={ev.ts}>{formatTime(ev.ts)}</time>
              <span class="muted">
                {ev.actor} · {ev.eventSource}
              </span>
            </div>
            <p class="emsg">{ev.message}</p>
            <EventDetails ev={ev} />
          </li>
        ))}
      </ol>
    </section>
  );
}

function EventDetails({ ev }: { ev: EventItem }) {
  const rows: [string, string][] = [];
  if (ev.nodeState) rows.push(['node state', label(ev.nodeState)]);
  if (ev.skipReason) rows.push(['skip reason', ev.skipReason]);
  if (ev.failureReason) rows.push(['failure', ev.failureReason]);
  if (ev.recoveryPath) rows.push(['recovery', ev.recoveryPath]);
  if (ev.approvalOwner) rows.push(['approval owner', ev.approvalOwner]);
  if (ev.approvalScope) rows.push(['approval scope', ev.approvalScope]);
  if (ev.artifact) rows.push(['artifact', ev.artifact]);
  if (ev.claim) rows.push(['sha256', ev.claim.sha256]);
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
