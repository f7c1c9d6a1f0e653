import type { ArtifactItem, NodeItem, RunDetail } from './api.js';
import { Command } from './Command.js';
import { checklistOf, OPEN_UP_TO } from './checklist.js';
import { Digest } from './Digest.js';
import { formatBytes, formatTime } from './format.js';

/** A quarantined record is never shown as complete: the banner comes first and says why. */
export function Quarantine({ run }: { run: RunDetail }) {
  if (run.status !== 'quarantined' && !run.quarantine) return null;
  return (
    <div class="banner quarantined" role="alert">
      <strong>This run is quarantined.</strong> Its record failed authentication or its artifacts drifted; it
      is not complete and accepts no writes.
      {run.quarantine && (
        <>
          {' '}
          Since {formatTime(run.quarantine.since)}.
          <ul>
            {run.quarantine.reasons.map((r) => (
              <li key={r}>{r}</li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

/**
 * The completion preview as a checklist (checklist.ts): one collapsible group per part of the
 * finish line, its count first and how many problems it holds; open when it holds a few (so a
 * long list does not push the lane and approvals off the page), each problem with
 * the next step the bridge gives it (docs/next-steps.md; a step the view cut shows none).
 */
export function Completion({ run }: { run: RunDetail }) {
  const preview = run.completionPreview;
  if (!preview || run.status === 'quarantined') return null;
  const blocking = run.status !== 'completed' && !preview.ready;
  return (
    <section aria-labelledby="completion-heading" class={`completion ${blocking ? 'blocked' : 'ready'}`}>
      <h2 id="completion-heading">Completion</h2>
      {run.status === 'completed' ? (
        <p>Completed: the finish line accepted this run.</p>
      ) : preview.ready ? (
        <p>Ready: nothing known blocks run.completed (the finish-line gate still runs in full).</p>
      ) : (
        <p>
          Cannot complete yet: {preview.problems.length} problem{preview.problems.length === 1 ? '' : 's'}{' '}
          block run.completed. Each group lists its problems and the next step for each.
        </p>
      )}
      {run.status !== 'completed' && (
        <div class="checklist">
          {checklistOf(run).map((g) => (
            <details
              key={g.id}
              class="check-group"
              data-group={g.id}
              open={g.problems.length > 0 && g.problems.length <= OPEN_UP_TO}
            >
              <summary>
                <span
                  class={g.problems.length > 0 ? 'check-mark blocks' : 'check-mark ok'}
                  aria-hidden="true"
                >
                  {g.problems.length > 0 ? '✕' : '✓'}
                </span>{' '}
                <span class="check-line">{g.line}</span>
                {' · '}
                <span class="check-count">
                  {g.problems.length === 0 ? 'nothing blocks' : `${g.problems.length} blocking`}
                </span>
              </summary>
              {g.problems.length > 0 && (
                <ul class="problems">
                  {g.problems.map((p) => (
                    <li key={p.problem}>
                      {p.problem}
                      {p.fix !== undefined && (
                        <Command label="Next step" text={p.fix} codeClass="fix-command" />
                      )}
                    </li>
                  ))}
                </ul>
              )}
            </details>
          ))}
        </div>
      )}
    </section>
  );
}

/** A failed or skipped write says so (with its agent-supplied reason, rendered as text). */
function verifiedCell(a: ArtifactItem, node: NodeItem | undefined): string {
  if (a.outcome === 'failed') return a.failureReason ? `failed: ${a.failureReason}` : 'failed';
  if (a.outcome === 'skipped') return a.skipReason ? `skipped: ${a.skipReason}` : 'skipped';
  return node ? (node.artifactVerified ? 'yes' : 'no') : 'recorded';
}

export function Artifacts({ artifacts, nodes }: { artifacts: ArtifactItem[]; nodes: NodeItem[] }) {
  return (
    <section aria-labelledby="artifacts-heading">
      <h2 id="artifacts-heading">Artifacts</h2>
      {artifacts.length === 0 ? (
        <p class="muted">No artifacts written yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="artifacts cards">
            <caption>SHA-256 claims recorded in the authenticated journal</caption>
            <thead>
              <tr>
                <th scope="col">Path</th>
                <th scope="col">Node</th>
                <th scope="col">Verified</th>
                <th scope="col">SHA-256</th>
                <th scope="col">Size</th>
                <th scope="col">Written</th>
              </tr>
            </thead>
            <tbody>
              {artifacts.map((a) => {
                const node = nodes.find((n) => n.id === a.nodeId && n.artifact === a.path);
                return (
                  <tr key={`${a.path}|${a.seq}`}>
                    <td data-label="Path">
                      <code>{a.path}</code>
                    </td>
                    <td data-label="Node">{a.nodeId}</td>
                    <td data-label="Verified">{verifiedCell(a, node)}</td>
                    <td data-label="SHA-256">
                      <Digest value={a.sha256} />
                    </td>
                    <td data-label="Size" class="num">
                      {formatBytes(a.size)}
                    </td>
                    <td data-label="Written">
                      {formatTime(a.ts)} (#{a.seq})
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
