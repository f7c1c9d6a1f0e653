import { readFile, writeFile } from 'node:fs/promises';
import type { Test } from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { startTestBridge, type TestBridge, type TestEnv } from './bridge.js';

/**
 * Creates `runId` (title `seeded`), lets `seed` add to it, then flips one bit of its sealed config
 * with the bridge stopped: the bridge started after (returned) quarantines the run when it opens it.
 */
export async function startWithQuarantinedRun(
  t: Test,
  te: TestEnv,
  runId: string,
  seed: (b: TestBridge) => Promise<void>,
): Promise<TestBridge> {
  const seeded = await startTestBridge(te);
  t.equal((await seeded.req('POST', '/runs', { id: runId, title: 'seeded' })).status, 201);
  await seed(seeded);
  await seeded.close();
  const config = runPaths(te.dataDir, runId).config;
  const buf = await readFile(config);
  buf[buf.indexOf('"title":"seeded') + '"title":"seeded'.length - 1]! ^= 0x01;
  await writeFile(config, buf);
  return startTestBridge(te);
}
