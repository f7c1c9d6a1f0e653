import t from 'tap';
import type { FinishLineEnv, RunFacts } from '../src/validators/facts.js';

/**
 * The finish-line gate's bounds on its validator children (runner.ts): at most `concurrency`
 * children at once however many completions arrive, each started with the caller's deadline, a
 * bound on its output and none of the bridge's environment; options that would make either bound
 * meaningless are refused when the gate is made. The children here are stand-ins (execa is
 * mocked), so a burst can be held open and counted.
 */
interface Spawn {
  file: string;
  options: Record<string, unknown>;
}
const spawns: Spawn[] = [];
let active = 0;
let peak = 0;
const execaSpy = async (file: string, _args: string[], options: Record<string, unknown>) => {
  spawns.push({ file, options });
  active++;
  peak = Math.max(peak, active);
  await new Promise((r) => setTimeout(r, 20));
  active--;
  return {
    exitCode: 0,
    timedOut: false,
    stdout: JSON.stringify({ ok: true, problems: [], findings: [], rules: [] }),
  };
};
// Resolved from this file's own URL, so the compiled module beside the compiled test is loaded.
const { createFinishLineGate } = await t.mockImport<typeof import('../src/validators/runner.js')>(
  new URL('../src/validators/runner.js', import.meta.url).href,
  { '#execa': { execa: execaSpy } },
);

const facts = {} as RunFacts;
const env: FinishLineEnv = { realRoot: null, repoRoot: '/nonexistent', trustPin: '0'.repeat(64) };

t.test('a burst of completions never runs more than `concurrency` children at once', async (t) => {
  const gate = createFinishLineGate({ concurrency: 2, deadlineMs: 5_000 });
  const answers = await Promise.all(Array.from({ length: 7 }, () => gate(facts, env)));
  t.same(answers, Array(7).fill([]), 'every completion got its answer');
  t.equal(spawns.length, 7, 'one child each');
  t.equal(peak, 2, 'two at a time, never more');
});

t.test('each child has the deadline, an output bound and no inherited environment', async (t) => {
  spawns.length = 0;
  const gate = createFinishLineGate({ concurrency: 1, deadlineMs: 1_234 });
  await gate(facts, env);
  const [spawn] = spawns;
  t.equal(spawn?.options['timeout'], 1_234, 'the deadline');
  const bound = spawn?.options['maxBuffer'];
  t.ok(typeof bound === 'number' && bound > 0 && bound <= 8 * 1024 * 1024, `output bound: ${bound}`);
  t.equal(spawn?.options['extendEnv'], false, 'process.env is not merged in');
});

t.test('a gate that could never start a child, or never stop one, is refused', async (t) => {
  for (const concurrency of [0, -1, 1.5, Number.NaN])
    t.throws(
      () => createFinishLineGate({ concurrency, deadlineMs: 1_000 }),
      RangeError,
      `concurrency ${concurrency}`,
    );
  for (const deadlineMs of [0, -5, 2.5, Number.POSITIVE_INFINITY])
    t.throws(
      () => createFinishLineGate({ concurrency: 1, deadlineMs }),
      RangeError,
      `deadlineMs ${deadlineMs}`,
    );
});
