import { tmpdir } from 'node:os';
import t from 'tap';
import type { RunConfig, RunState } from '../../src/contract/index.js';
import { CONTENT_RULES, runFinishLine } from '../../src/validators/finish-line.js';
import { STRUCTURAL_RULES } from '../../src/validators/structural.js';

/**
 * The finish-line runner fails closed: a rule that throws (here on facts with no state at all)
 * is a problem named after the rule, never a pass, and every other rule still runs.
 */
t.test('a rule that throws is a problem named after it, never a pass', async (t) => {
  const facts = { runId: 'broken', config: {} as RunConfig, state: {} as RunState };
  const env = { realRoot: null, repoRoot: '/nonexistent', trustPin: '0'.repeat(64) };
  const result = await runFinishLine(facts, env);
  const names = [...STRUCTURAL_RULES, ...CONTENT_RULES].map(([name]) => name);
  t.same(
    result.rules.map((r) => r.name),
    [...names, 'secret-scan'],
    'every rule ran, then the secret scan',
  );
  for (const rule of result.rules) {
    // Without an artifact root there is nothing to scan.
    if (rule.name === 'secret-scan') t.same(rule.problems, [], 'the scan has no root to read');
    else t.ok(rule.problems.length > 0, `${rule.name} reports a problem`);
  }
  const failed = result.rules.filter((r) =>
    r.problems.some((p) => p.startsWith(`${r.name}: the rule failed: `)),
  );
  t.ok(
    failed.some((r) => CONTENT_RULES.some(([name]) => name === r.name)),
    'a content rule that threw is reported as failed',
  );
  t.ok(result.problems.length >= result.rules.length - 1, 'and the problems reach the answer');
});

t.test('a secret scan that throws is a problem, never a pass', async (t) => {
  const facts = { runId: 'broken', config: {} as RunConfig, state: {} as RunState };
  const env = { realRoot: tmpdir(), repoRoot: '/nonexistent', trustPin: '0'.repeat(64) };
  const result = await runFinishLine(facts, env);
  const scan = result.rules.find((r) => r.name === 'secret-scan');
  t.equal(scan?.problems.length, 1);
  t.match(scan?.problems[0], /^the secret scan failed: /);
  t.ok(result.problems.includes(scan?.problems[0] ?? ''), 'it reaches the answer');
});
