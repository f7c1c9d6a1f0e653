import { useState } from 'preact/hooks';
import type { EventItem, NodeItem } from './api.js';
import { Digest } from './Digest.js';
import { formatGap } from './event-scan.js';
import { formatTime, label } from './format.js';
import { type NodeTrace, type Traces, timeSpent } from './node-traces.js';

const MARK: Readonly<Record<string, string>> = {
  passed: '✓',
  active: '▶',
  failed: '✕',
  skipped: '↷',
  pending: '○',
  needs_approval: '!',
};

/** A node's place in the flow and its name. */
const NodeHead = ({ index, id }: { index: number; id: string }) => (
  <span class="node-head">
    <span class="node-index" aria-hidden="true">
      {index}
    </span>
    <span class="node-name">{id}</span>
  </span>
);

/** A message in a node's event list: its start, the timeline has it whole. */
const MESSAGE_SHOWN = 140;
const short = (text: string) => (text.length > MESSAGE_SHOWN ? `${text.slice(0, MESSAGE_SHOWN)}…` : text);

function NodeEvents({ id, trace }: { id: string; trace: NodeTrace | undefined }) {
  const events: EventItem[] = trace ? [...trace.recent].reverse() : [];
  const earlier = (trace?.count ?? 0) - events.length;
  return (
    <div id={id} role="tooltip" class="node-events">
      {events.length === 0 ? (
        <p>No events read for this node.</p>
      ) : (
        <>
          <p>
            {trace?.count === events.length
              ? `Its ${events.length} event${events.length === 1 ? '' : 's'}, newest first:`
              : `Its newest ${events.length} of ${trace?.count} events (the ${earlier} earlier ones are in Events below):`}
          </p>
          <ul>
            {events.map((e) => (
              <li key={e.seq} data-seq={e.seq}>
                #{e.seq} {e.type} · {e.status} · {formatTime(e.ts)} · {short(e.message)}
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

/** "12 events · 3 min 5 s", "so far" while the node is open; time from its first event (node-traces.ts). */
function traceLine(node: NodeItem, trace: NodeTrace | undefined, now: number): string {
  if (!trace) return 'no events';
  const spent = timeSpent(node, trace, now);
  const events = `${trace.count} event${trace.count === 1 ? '' : 's'}`;
  return spent === null ? events : `${events} · ${formatGap(spent.ms)}${spent.open ? ' so far' : ''}`;
}

/**
 * The 14-node flow in order, as a lane that wraps on narrow windows. Each node shows its events
 * count and time spent; hovering it or focusing its events button lists its newest events (the
 * button pins the list open, Escape hides it). A `blueprint` run shows the static topology only:
 * which nodes are required and their artifacts, no state, time or events.
 */
export function NodeLane({
  nodes,
  current,
  blueprint,
  traces,
}: {
  nodes: NodeItem[];
  current: string | null;
  blueprint: boolean;
  traces: Traces;
}) {
  const [pinned, setPinned] = useState<string | null>(null);
  const [hidden, setHidden] = useState<string | null>(null);
  const now = Date.now();
  if (blueprint)
    return (
      <section aria-labelledby="flow-heading">
        <h2 id="flow-heading">Flow: static topology</h2>
        <p class="muted">
          A blueprint run: the flow's shape as configured, which nodes are required and the artifact each one
          writes. It makes no claim about progress.
        </p>
        <ol class="lane blueprint">
          {nodes.map((node, i) => (
            <li key={node.id} class="node n-blueprint" data-node-id={node.id}>
              <NodeHead index={i + 1} id={node.id} />
              <span class={node.required ? 'req' : 'opt'}>{node.required ? 'required' : 'optional'}</span>
              <span class="node-artifact">
                {node.artifact ? (
                  <>
                    artifact <code>{node.artifact}</code>
                  </>
                ) : (
                  'no artifact'
                )}
              </span>
            </li>
          ))}
        </ol>
      </section>
    );
  return (
    <section aria-labelledby="flow-heading">
      <h2 id="flow-heading">Flow</h2>
      <ol class="lane" data-events-read={traces.next}>
        {nodes.map((node, i) => {
          const trace = traces.byNode.get(node.id);
          const listId = `node-events-${node.id}`;
          const open = pinned === node.id;
          return (
            <li
              key={node.id}
              class={`node n-${node.state}${node.id === current ? ' current' : ''}${open ? ' pinned' : ''}${hidden === node.id ? ' dismissed' : ''}`}
              data-node-id={node.id}
              data-state={node.state}
              aria-current={node.id === current ? 'step' : undefined}
              onMouseLeave={() => setHidden(null)}
              onKeyDown={(e) => {
                if (e.key !== 'Escape') return;
                setPinned(null);
                setHidden(node.id);
              }}
            >
              <NodeHead index={i + 1} id={node.id} />
              <span class="node-state">
                <span aria-hidden="true">{MARK[node.state] ?? '?'} </span>
                {label(node.state)}
              </span>
              <span class={node.required ? 'req' : 'opt'}>{node.required ? 'required' : 'optional'}</span>
              {node.artifact && (
                <span class="node-artifact" title={node.artifact}>
                  {node.artifactVerified ? 'artifact verified' : 'artifact not verified'}
                </span>
              )}
              <button
                type="button"
                class="node-trace"
                data-events={trace?.count ?? 0}
                aria-expanded={open}
                aria-describedby={listId}
                onClick={() => {
                  // Pressed again it closes the list, though the button keeps the focus.
                  setPinned(open ? null : node.id);
                  setHidden(open ? node.id : null);
                }}
                onBlur={() => setHidden(null)}
              >
                {traceLine(node, trace, now)}
              </button>
              <NodeEvents id={listId} trace={trace} />
              {node.skipReason && <span class="reason">Skipped: {node.skipReason}</span>}
              {node.failureReason && <span class="reason">Failed: {node.failureReason}</span>}
              {node.recoveryPath && <span class="reason">Recovery: {node.recoveryPath}</span>}
              {node.approvalDrift.map((d) => (
                <span key={d.path} class="reason" data-approval-drift={d.path}>
                  Approval drift: <code>{d.path}</code> was {d.decision} (event {d.decidedSeq}) as{' '}
                  <Digest value={d.approvedSha256} />, claimed since as <Digest value={d.currentSha256} />{' '}
                  (event {d.currentSeq}); request the approval again
                </span>
              ))}
            </li>
          );
        })}
      </ol>
    </section>
  );
}
