import type { NodeItem } from './api.js';
import { Digest } from './Digest.js';
import { label } from './format.js';

const MARK: Readonly<Record<string, string>> = {
  passed: '✓',
  active: '▶',
  failed: '✕',
  skipped: '↷',
  pending: '○',
  needs_approval: '!',
};

/** The 14-node flow in order, as a lane that wraps on narrow windows. */
export function NodeLane({ nodes, current }: { nodes: NodeItem[]; current: string | null }) {
  return (
    <section aria-labelledby="flow-heading">
      <h2 id="flow-heading">Flow</h2>
      <ol class="lane">
        {nodes.map((node, i) => (
          <li
            key={node.id}
            class={`node n-${node.state}${node.id === current ? ' current' : ''}`}
            data-node-id={node.id}
            data-state={node.state}
            aria-current={node.id === current ? 'step' : undefined}
          >
            <span class="node-head">
              <span class="node-index" aria-hidden="true">
                {i + 1}
              </span>
              <span class="node-name">{node.id}</span>
            </span>
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
        ))}
      </ol>
    </section>
  );
}
