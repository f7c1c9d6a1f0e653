import type { ApprovalRecord } from '../contract/index.js';
import { PROBLEMS_MAX_BYTES, VIEW_APPROVALS_MAX_BYTES, VIEW_PROBLEMS_MAX_BYTES } from '../contract/index.js';
import type { QuarantineInfo } from '../storage/store.js';

/**
 * The parts of a run view that grow with the run's history or its documents (CONTRACT 4:
 * responses stay under 1 MiB). Every other part is bounded by the event and config ceilings: 14 nodes, the artifact
 * paths of the config, one self-heal record.
 */

/** Spends a byte budget on JSON items; false (nothing spent) once an item does not fit. */
function byteBudget(maxBytes: number): (item: unknown) => boolean {
  let left = maxBytes;
  return (item) => {
    const bytes = Buffer.byteLength(JSON.stringify(item)) + 1;
    if (bytes > left) return false;
    left -= bytes;
    return true;
  };
}

/**
 * Every pending approval, oldest first (one shown stays shown until it is decided), then, if all
 * pending ones fit, the newest decided ones; listed in request order, with the count left out.
 */
export function boundedApprovals(
  all: readonly ApprovalRecord[],
  maxBytes: number = VIEW_APPROVALS_MAX_BYTES,
): { approvals: ApprovalRecord[]; omitted: number } {
  const fits = byteBudget(maxBytes);
  const kept = new Set<ApprovalRecord>();
  let pendingFit = true;
  for (const a of all) {
    if (a.status !== 'pending') continue;
    if (!fits(a)) {
      pendingFit = false;
      break;
    }
    kept.add(a);
  }
  for (let i = all.length - 1; pendingFit && i >= 0; i--) {
    const a = all[i] as ApprovalRecord;
    if (a.status === 'pending') continue;
    if (!fits(a)) break;
    kept.add(a);
  }
  const approvals = kept.size === all.length ? [...all] : all.filter((a) => kept.has(a));
  return { approvals: approvals.map((a) => ({ ...a })), omitted: all.length - approvals.length };
}

/** The first lines that fit, then one line saying how many more there are (`2 more problems not shown`). */
export function boundedLines(lines: readonly string[], maxBytes: number, noun: string): string[] {
  const fits = byteBudget(maxBytes);
  const shown = lines.findIndex((p) => !fits(p));
  if (shown < 0) return [...lines];
  const more = lines.length - shown;
  return [...lines.slice(0, shown), `${more} more ${noun}${more === 1 ? '' : 's'} not shown`];
}

/** The first problems that fit, then one line saying how many more there are. */
export function boundedProblems(problems: string[], maxBytes: number = VIEW_PROBLEMS_MAX_BYTES): string[] {
  return boundedLines(problems, maxBytes, 'problem');
}

/**
 * A quarantine as a view shows it: its reasons (the store keeps at most QUARANTINE_REASONS_MAX,
 * but one reason can quote a long path a document names) cut to PROBLEMS_MAX_BYTES.
 */
export function boundedQuarantine(q: QuarantineInfo): QuarantineInfo {
  return { reasons: boundedLines(q.reasons, PROBLEMS_MAX_BYTES, 'reason'), since: q.since };
}
