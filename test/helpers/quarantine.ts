import { readFile, writeFile } from 'node:fs/promises';
import type { Test } from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { startTestBridge, type TestBridge, type TestEnv } from './bridge.js';
import { rewriteConfigRow } from './pg-store.js';

/**
 * Creates `runId` (title `seeded`), lets `seed` add to it, then flips one bit of its sealed config
 * (its file, or its row) with the bridge stopped: the bridge started after (returned) quarantines the run when it opens it.
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
  const flip = (buf: Buffer) => {
    buf[buf.indexOf('"title":"seeded') + '"title":"seeded'.length - 1]! ^= 0x01;
    return buf;
  };
  const url = te.env['HARNESS_DATABASE_URL'];
  if (url !== undefined) {
    await rewriteConfigRow(url, runId, flip);
  } else {
    const config = runPaths(te.dataDir, runId).config;
    await writeFile(config, flip(await readFile(config)));
  }
  return startTestBridge(te);
}
