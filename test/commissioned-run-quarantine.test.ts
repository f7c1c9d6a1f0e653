import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { appendFile, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
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

t.test('an adapter replaced by a FIFO quarantines the run; the read does not hang on it', async (t) => {
  const c = await commissionedRun(t);
  await completed(t, c);
  const adapter = join(c.f.root, 'project-adapter.json');
  await rm(adapter);
  execFileSync('mkfifo', [adapter]);
  // Should a read be blocked on the FIFO, a writer that opens and closes it lets it go.
  t.teardown(async () => {
    const w = await open(adapter, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => null);
    await w?.close();
  });
  // The timer is unref'd: once the read answers, it does not hold the test process for 20 s.
  const read = await Promise.race([
    c.b.req('GET', `/runs/${c.f.runId}`),
    delay(20_000, null, { ref: false }),
  ]);
  t.ok(read, 'the read answers');
  if (!read) return;
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
