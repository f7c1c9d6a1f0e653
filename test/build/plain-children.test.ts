import { execFileSync } from 'node:child_process';
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
