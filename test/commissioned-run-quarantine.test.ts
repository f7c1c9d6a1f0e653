import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { commissionedRun, completed, expectQuarantined } from './helpers/commissioned-run.js';

/**
 * Issue 3 item 6, continued (test/commissioned-run-e2e.test.ts has the byte drift): a completed
 * commissioned run is quarantined when its sealed adapter changes or an artifact it references
 * gains a bridge credential value. One run per drift, so each reason is seen on its own.
 * test/commissioned-run-cache-misses.test.ts has the changes only the verdict cache key can see.
 */
t.test('changing the adapter after completion quarantines the run', async (t) => {
  const c = await commissionedRun(t);
  await completed(t, c);
  await appendFile(join(c.f.root, 'project-adapter.json'), ' ');
  await expectQuarantined(t, c, /^adapter changed since the run sealed it$/);
});

t.test('a credential value written into an artifact quarantines the run', async (t) => {
  const c = await commissionedRun(t);
  await completed(t, c);
  const token = c.b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  await c.f.mutate('rca/rca.json', (rca) => {
    rca.rootCause.evidence.push(`log line ${token}`);
  });
  const body = await expectQuarantined(t, c, /^artifact rca\/rca\.json contains a bridge credential value$/);
  t.notMatch(JSON.stringify(body), token, 'the credential is never echoed');
});
