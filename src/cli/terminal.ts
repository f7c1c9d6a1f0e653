import { visibleEscape } from '../contract/index.js';

/**
 * Text from the bridge (problems, quarantine reasons, approval owners and scopes) and from a data
 * directory or an artifact root (artifact roots, artifact paths, adapter values) carries strings an
 * agent chose. Written to an operator's terminal as they are, control characters could move the
 * cursor, rewrite what an approval prompt shows or hide a line, and bidirectional overrides could
 * reorder it. Each such character is shown as a visible escape instead; everything else is kept.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function terminalText(text: string): string {
  return text.replace(UNSAFE, visibleEscape);
}

/**
 * JSON for the terminal: JSON.stringify escapes C0 controls inside strings but writes DEL, C1
 * controls and bidirectional overrides raw. Outside strings JSON text is ASCII (its only control
 * character the indentation's newline), so writing each of them as a `\uXXXX` escape keeps the
 * output valid JSON that parses to the same value.
 */
export function terminalJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(UNSAFE, (c) =>
    c === '\n' ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
