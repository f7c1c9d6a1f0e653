import type { RunDetail, RunSummary } from './api.js';
import { type Attention, attentionOf, FIRST_PROBLEMS, needsNothing } from './attention.js';
import { Command } from './Command.js';
import { formatAgo, formatTime } from './format.js';
import { LongText } from './LongText.js';
import { bandCandidates, useRunDetails } from './run-details.js';

const runLink = (runId: string) => <a href={`#/runs/${encodeURIComponent(runId)}`}>{runId}</a>;

/** One run's decisions and blockers; `withRun` names the run on each line (the runs list's band). */
function AttentionItems({ attention, withRun }: { attention: Attention; withRun: boolean }) {
  const where = (runId: string) => withRun && <>{runLink(runId)} · </>;
  return (
    <>
      {attention.pending.map((p) => (
        <li
          key={`a|${p.runId}|${p.nodeId}|${p.owner}|${p.scope}`}
          class="needs approval"
          data-needs="approval"
        >
          <p>
            {where(p.runId)}
            <strong>Approval waiting</strong> at node <code>{p.nodeId}</code> · owner <b>{p.owner}</b> · scope{' '}
            <b>{p.scope}</b> · requested{' '}
            <time dateTime={p.requestedAt} title={formatTime(p.requestedAt)}>
              {formatAgo(p.requestedAt)}
            </time>
          </p>
          <Command label="Grant from an approval shell" text={p.grant} codeClass="grant-command" />
          <Command
            label="Or deny: replace both (placeholders) with quoted text first; the shell refuses the command as it is"
            text={p.deny}
            codeClass="deny-command"
          />
        </li>
      ))}
      {attention.failed.map((f) => (
        <li key={`f|${f.runId}|${f.nodeId}`} class="needs failed" data-needs="failed">
          <p>
            {where(f.runId)}
            <strong>Node failed</strong>: <code>{f.nodeId}</code>
          </p>
          <dl class="facts compact">
            <div>
              <dt>Reason</dt>
              <dd>{f.failureReason === null ? '—' : <LongText text={f.failureReason} />}</dd>
            </div>
            <div>
              <dt>Recovery</dt>
              <dd>{f.recoveryPath === null ? '—' : <LongText text={f.recoveryPath} />}</dd>
            </div>
          </dl>
        </li>
      ))}
      {attention.refused && (
        <li key={`r|${attention.refused.runId}`} class="needs refused" data-needs="refused">
          <p>
            {where(attention.refused.runId)}
            <strong>Completion refused</strong>: {attention.refused.problemCount} problem
            {attention.refused.problemCount === 1 ? '' : 's'} still block run.completed
            {attention.refused.problemCount > FIRST_PROBLEMS ? `; the first ${FIRST_PROBLEMS}:` : ':'}
          </p>
          <ul>
            {attention.refused.firstProblems.map((p) => (
              <li key={p}>
                <LongText text={p} />
              </li>
            ))}
          </ul>
        </li>
      )}
    </>
  );
}

/** The run view's first panel: what in this run waits for a person, or nothing at all. */
export function RunNeedsYou({ run }: { run: RunDetail }) {
  const attention = attentionOf(run);
  if (needsNothing(attention)) return null;
  return (
    <section class="needs-you" aria-labelledby="needs-you-heading">
      <h2 id="needs-you-heading">Needs you</h2>
      <ul class="needs-list">
        <AttentionItems attention={attention} withRun={false} />
      </ul>
    </section>
  );
}

/**
 * The runs list's first panel: every listed run with a pending approval or a refused completion,
 * and failed nodes among the most recently active runs (bandCandidates), newest activity first.
 */
export function RunsNeedYou({ runs }: { runs: RunSummary[] }) {
  const candidates = bandCandidates(runs);
  const details = useRunDetails(candidates);
  const waiting = candidates.flatMap((r) => {
    const view = details.get(r.id);
    const attention = view && attentionOf(view);
    return attention && !needsNothing(attention) ? [{ runId: r.id, attention }] : [];
  });
  const unread = candidates.filter(
    (r) => !details.has(r.id) && (r.pendingApprovals > 0 || r.status === 'blocked'),
  );
  if (waiting.length === 0 && unread.length === 0) return null;
  return (
    <section class="needs-you" aria-labelledby="needs-you-heading">
      <h2 id="needs-you-heading">Needs you</h2>
      <ul class="needs-list">
        {waiting.map(({ runId, attention }) => (
          <AttentionItems key={runId} attention={attention} withRun />
        ))}
        {unread.map((r) => (
          <li key={`u|${r.id}`} class="needs" data-needs="unread">
            {runLink(r.id)} ·{' '}
            {r.pendingApprovals > 0 ? `${r.pendingApprovals} pending approval(s)` : 'completion refused'}
          </li>
        ))}
      </ul>
    </section>
  );
}
