import type { ApprovalItem } from './api.js';
import { Command } from './Command.js';
import { approvalsOmittedNote, approveCommand, formatTime, label } from './format.js';

/** Pending approvals first, each with the exact command an operator runs in the approval shell. */
export function Approvals({
  runId,
  approvals,
  omitted,
  pendingTotal,
}: {
  runId: string;
  approvals: ApprovalItem[];
  omitted: number;
  /** Every pending approval of the run (the summary's count), shown or not. */
  pendingTotal: number;
}) {
  const pending = approvals.filter((a) => a.status === 'pending');
  const decided = approvals.filter((a) => a.status !== 'pending');
  return (
    <section aria-labelledby="approvals-heading">
      <h2 id="approvals-heading">Approvals</h2>
      {approvals.length === 0 && <p class="muted">No approvals requested.</p>}
      {omitted > 0 && (
        <p class="muted" data-approvals-omitted={omitted}>
          {approvalsOmittedNote(omitted, pending.length, pendingTotal)}
        </p>
      )}
      {pending.length > 0 && (
        <ul class="approvals">
          {pending.map((a) => (
            <li
              key={`${a.nodeId}|${a.owner}|${a.scope}`}
              class="approval pending"
              data-approval-status="pending"
            >
              <p>
                <strong>Waiting for approval</strong> at node <code>{a.nodeId}</code>, requested{' '}
                {formatTime(a.requestedAt)}
              </p>
              <dl class="facts compact">
                <div>
                  <dt>Owner</dt>
                  <dd>{a.owner}</dd>
                </div>
                <div>
                  <dt>Scope</dt>
                  <dd>{a.scope}</dd>
                </div>
              </dl>
              <Command
                label="Grant from an approval shell"
                text={approveCommand(runId, a.owner, a.scope, 'grant')}
                codeClass="approve-command"
              />
              <Command
                label="Or deny"
                text={approveCommand(runId, a.owner, a.scope, 'deny')}
                codeClass="approve-command"
              />
            </li>
          ))}
        </ul>
      )}
      {decided.length > 0 && (
        <div class="table-wrap">
          <table class="decided cards">
            <caption>Decided approvals</caption>
            <thead>
              <tr>
                <th scope="col">Node</th>
                <th scope="col">Owner</th>
                <th scope="col">Scope</th>
                <th scope="col">Decision</th>
                <th scope="col">Requested</th>
                <th scope="col">Decided</th>
              </tr>
            </thead>
            <tbody>
              {decided.map((a) => (
                <tr key={`${a.nodeId}|${a.owner}|${a.scope}|${a.requestedSeq}`}>
                  <td data-label="Node">{a.nodeId}</td>
                  <td data-label="Owner">{a.owner}</td>
                  <td data-label="Scope">{a.scope}</td>
                  <td data-label="Decision">
                    <span class={`badge s-${a.status}`}>{label(a.status)}</span>
                  </td>
                  <td data-label="Requested">{formatTime(a.requestedAt)}</td>
                  <td data-label="Decided">{formatTime(a.decidedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
