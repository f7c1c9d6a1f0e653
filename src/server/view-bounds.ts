import type { ApprovalRecord } from '../contract/index.js';
import {
  PROBLEMS_MAX_BYTES,
  VIEW_APPROVALS_MAX_BYTES,
  VIEW_PROBLEMS_MAX_BYTES,
  VIEW_STEPS_MAX_BYTES,
  VIEW_TEXTS_MAX_BYTES,
} from '../contract/index.js';
import type { QuarantineInfo } from '../storage/store.js';

/**
 * The parts of a run view that grow with the run's history or its documents, or that add up over
 * its nodes and artifact records (CONTRACT 4: responses stay under 1 MiB). Every other part is
 * bounded by the event and config ceilings: the summary, the config's metadata and artifact paths
 * (each shown at most twice), one self-heal record. docs/api.md "Response ceiling" adds them up.
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

/** The first next steps that fit (the problems list, cut alike, says how many problems there are). */
export function boundedSteps<T>(steps: readonly T[], maxBytes: number = VIEW_STEPS_MAX_BYTES): T[] {
  const fits = byteBudget(maxBytes);
  const shown = steps.findIndex((s) => !fits(s));
  return shown < 0 ? [...steps] : steps.slice(0, shown);
}

/**
 * A quarantine as a view shows it: its reasons (the store keeps at most QUARANTINE_REASONS_MAX,
 * but one reason can quote a long path a document names) cut to PROBLEMS_MAX_BYTES.
 */
export function boundedQuarantine(q: QuarantineInfo): QuarantineInfo {
  return { reasons: boundedLines(q.reasons, PROBLEMS_MAX_BYTES, 'reason'), since: q.since };
}

/** The texts of a run view that share VIEW_TEXTS_MAX_BYTES. */
const TEXT_FIELDS = ['skipReason', 'failureReason', 'recoveryPath'] as const;
export type TextHolder = Record<(typeof TEXT_FIELDS)[number], string | null>;

/**
 * Shortens the node and artifact texts of a view (the view's own copies, in place) so that together
 * they take at most `maxBytes` of JSON; returns how many it shortened. When they do not fit, every
 * text longer than one cap is cut to that cap and every shorter one is kept whole, the cap being the
 * largest that fits (so a text is only ever cut for texts at least as long as itself).
 */
export function boundTexts(holders: readonly TextHolder[], maxBytes: number = VIEW_TEXTS_MAX_BYTES): number {
  const slots: { holder: TextHolder; field: (typeof TEXT_FIELDS)[number]; bytes: number }[] = [];
  let total = 0;
  for (const holder of holders) {
    for (const field of TEXT_FIELDS) {
      const text = holder[field];
      if (text === null) continue;
      const bytes = jsonStringBytes(text);
      slots.push({ holder, field, bytes });
      total += bytes;
    }
  }
  if (total <= maxBytes) return 0;
  // Shortest first: each text that is no longer than an equal share of what is left keeps its
  // bytes; the first that is longer sets the cap for itself and every longer one.
  const sizes = slots.map((s) => s.bytes).sort((a, b) => a - b);
  let left = maxBytes;
  let cap = 0;
  for (let i = 0; i < sizes.length; i++) {
    const share = Math.floor(left / (sizes.length - i));
    const size = sizes[i] as number;
    if (size > share) {
      cap = share;
      break;
    }
    left -= size;
  }
  let shortened = 0;
  for (const { holder, field, bytes } of slots) {
    if (bytes <= cap) continue;
    holder[field] = shortenedText(holder[field] as string, cap);
    shortened++;
  }
  return shortened;
}

/** The bytes of `JSON.stringify(text)`, quotes included. */
export function jsonStringBytes(text: string): number {
  let bytes = 2;
  for (const ch of text) bytes += jsonCharBytes(ch);
  return bytes;
}

/**
 * What one code point (or lone surrogate) takes in `JSON.stringify` output, in UTF-8: `"` and `\`
 * and the short escapes two, other control characters and lone surrogates six (`\u0001`).
 */
function jsonCharBytes(ch: string): number {
  if (ch.length === 2) return 4;
  const u = ch.charCodeAt(0);
  if (u === 0x22 || u === 0x5c) return 2;
  if (u < 0x20) return u === 0x08 || u === 0x09 || u === 0x0a || u === 0x0c || u === 0x0d ? 2 : 6;
  if (u < 0x80) return 1;
  if (u < 0x800) return 2;
  if (u >= 0xd800 && u <= 0xdfff) return 6;
  return 3;
}

/**
 * The longest whole-code-point start of `text` that, followed by `… [N more bytes not shown]` (N
 * counting the UTF-8 bytes cut), takes at most `maxBytes` of JSON. A cap too small for the marker
 * (never in a view: the cap is at least VIEW_TEXTS_MAX_BYTES / 87) leaves the marker alone.
 */
export function shortenedText(text: string, maxBytes: number): string {
  const utf8 = Buffer.byteLength(text);
  const marker = (cut: number) => `… [${cut} more bytes not shown]`;
  // The marker never grows past its size for the whole text's byte count.
  let used = jsonStringBytes(marker(utf8));
  let end = 0;
  for (const ch of text) {
    const bytes = jsonCharBytes(ch);
    if (used + bytes > maxBytes) break;
    used += bytes;
    end += ch.length;
  }
  const kept = text.slice(0, end);
  return kept + marker(utf8 - Buffer.byteLength(kept));
}
