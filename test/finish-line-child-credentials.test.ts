import t from 'tap';
import { childEnvironment } from '../src/validators/child-environment.js';
import { createFinishLineGate, probeChildEnvironment, TIMEOUT_PROBLEM } from '../src/validators/runner.js';
import { buildFixture } from './helpers/finish-line-fixture.js';

const SECRETS = {
  HARNESS_BRIDGE_INTEGRITY_KEY: 'i'.repeat(40),
  HARNESS_BRIDGE_ACCESS_TOKEN: 'a'.repeat(40),
  HARNESS_HUMAN_APPROVAL_TOKEN: 'h'.repeat(40),
};

t.test('validator children see none of the three credentials', async (t) => {
  const saved = { ...process.env };
  Object.assign(process.env, SECRETS, { SOME_OTHER_SECRET: 'x' });
  t.teardown(() => {
    for (const k of [...Object.keys(SECRETS), 'SOME_OTHER_SECRET']) delete process.env[k];
    Object.assign(process.env, saved);
  });
  // Even a caller that passes them explicitly (or smuggles a value under another name) cannot leak them.
  const names = await probeChildEnvironment({
    concurrency: 1,
    deadlineMs: 30_000,
    childEnv: { ...SECRETS, SMUGGLED: SECRETS.HARNESS_BRIDGE_ACCESS_TOKEN, HARNESS_VALIDATOR_NOTE: 'ok' },
  });
  for (const name of Object.keys(SECRETS)) t.notOk(names.includes(name), `${name} absent`);
  t.notOk(names.includes('SMUGGLED'), 'a credential value under another name is dropped');
  t.notOk(names.includes('SOME_OTHER_SECRET'), 'the parent environment is not inherited');
  t.ok(names.includes('HARNESS_VALIDATOR_NOTE'), 'explicit non-secret extras pass');
  t.ok(names.includes('PATH'));
  const env = childEnvironment({ HARNESS_BRIDGE_ACCESS_TOKEN: 'z' });
  t.notOk('HARNESS_BRIDGE_ACCESS_TOKEN' in env);
});

t.test('the gate runs the orchestrator in a child and returns its problems', async (t) => {
  const f = await buildFixture(t);
  const gate = createFinishLineGate({ concurrency: 2, deadlineMs: 60_000 });
  t.same(await gate(f.facts, f.env), []);
  await f.mutate('proof/proof.json', (d) => (d.status = 'failed'));
  const problems = await gate(f.facts, f.env);
  t.ok(problems.some((p) => p.startsWith('proof: ')));
  // Several completions at once share the bounded pool of children.
  const all = await Promise.all([1, 2, 3].map(() => gate(f.facts, f.env)));
  for (const p of all) t.same(p, problems);
});

t.test('a deadline turns a slow child into a problem, never a pass', async (t) => {
  const f = await buildFixture(t);
  const gate = createFinishLineGate({ concurrency: 1, deadlineMs: 5 });
  t.same(await gate(f.facts, f.env), [TIMEOUT_PROBLEM]);
});

t.test('a crashing child is a problem', async (t) => {
  const gate = createFinishLineGate({ concurrency: 1, deadlineMs: 30_000 });
  const problems = await gate(null as never, { realRoot: null, repoRoot: '/', trustPin: '' });
  t.equal(problems.length, 1);
  t.match(problems[0], /^finish-line validators crashed/);
});
