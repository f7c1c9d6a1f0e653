import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { withoutTracker } from '../helpers/plain-children.js';

// The suite's time budget depends on this: a child carrying tap's loader starts twice as slowly.
t.test('a process a test starts runs without tap process tracker', async (t) => {
  const probe =
    'process.stdout.write(JSON.stringify([process.env.NODE_OPTIONS ?? null, Object.keys(process.env).filter((k) => k.startsWith("_TAPJS_PROCESSINFO_"))]))';
  for (const env of [undefined, { PATH: process.env['PATH'] ?? '' }]) {
    const [nodeOptions, tracked] = JSON.parse(
      execFileSync(process.execPath, ['-e', probe], { env }).toString(),
    );
    t.equal(
      nodeOptions === null ? null : withoutTracker(nodeOptions),
      nodeOptions,
      'NODE_OPTIONS names no tracker',
    );
    t.same(tracked, [], 'no tracker variables');
  }
});

// `npm run coverage` (c8) counts the processes tests start through NODE_V8_COVERAGE, which Node
// hands on to every child, even one given an explicit environment: the tracker is stripped, not it.
t.test('under coverage, a child given an explicit environment is counted too', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'harness-coverage-'));
  const before = process.env['NODE_V8_COVERAGE'];
  const coverage = before ?? dir;
  process.env['NODE_V8_COVERAGE'] = coverage;
  t.teardown(async () => {
    if (before === undefined) delete process.env['NODE_V8_COVERAGE'];
    await rm(dir, { recursive: true, force: true });
  });
  const seen = execFileSync(
    process.execPath,
    ['-e', 'process.stdout.write(process.env.NODE_V8_COVERAGE ?? "")'],
    {
      env: { PATH: process.env['PATH'] ?? '' },
    },
  ).toString();
  t.equal(seen, coverage);
});

t.test('withoutTracker drops only the tracker words', async (t) => {
  t.equal(
    withoutTracker(
      '--max-old-space-size=64 "--import=file:///x/node_modules/@tapjs/processinfo/dist/esm/import.mjs"',
    ),
    '--max-old-space-size=64',
  );
  t.equal(withoutTracker('--loader=/x/@tapjs/processinfo/loader.mjs'), '');
  t.equal(withoutTracker('"--require=/a b/c.js" --trace-warnings'), '"--require=/a b/c.js" --trace-warnings');
});
