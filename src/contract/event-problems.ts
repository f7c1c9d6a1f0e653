import { documentChecker } from './artifacts/check.js';
import { eventRuleProblems, type RunEvent, RunEventSchema } from './event.js';
import { EVENT_MAX_BYTES } from './limits.js';
import { eventTextProblems } from './well-formed.js';

const schema = documentChecker('RunEvent', RunEventSchema);

/**
 * Every problem the bridge's event route would find in `value` before it looks at the run: the
 * RunEvent schema, well-formed text, the conditional rules and the 16 KiB ceiling. A client that
 * must refuse a whole input before posting any of it (`harness replay`) asks this, so it judges
 * an event by the same rules the bridge does, never by a copy of them.
 */
export function runEventProblems(value: unknown): string[] {
  const problems = [...schema.problems(value), ...eventTextProblems(value)];
  if (problems.length === 0) problems.push(...eventRuleProblems(value as RunEvent));
  const bytes = Buffer.byteLength(JSON.stringify(value) ?? '');
  if (bytes > EVENT_MAX_BYTES) problems.push(`the event is ${bytes} bytes; at most ${EVENT_MAX_BYTES}`);
  return problems;
}
