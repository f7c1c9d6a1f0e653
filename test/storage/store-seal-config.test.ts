import { readFile } from 'node:fs/promises';
import t from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';

/**
 * The store's own guard on the write-once config (CONTRACT 7): once a run has a journal record,
 * `sealConfig` refuses, whatever its caller checked first (create-run.ts refuses earlier over
 * HTTP, which run-creation.test.ts covers).
 */
t.test('sealConfig refuses a run that has an event, and the config file stays as sealed', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/sealed/events', ev())).status, 201);
  const path = runPaths(b.t.dataDir, 'sealed').config;
  const before = await readFile(path);
  const loaded = await b.ctx.store.load('sealed');
  if (loaded.kind !== 'open') throw new Error('the run is not open');
  try {
    const { config } = loaded.run;
    await t.rejects(
      b.ctx.store.sealConfig(loaded.run, { ...config, artifactRoot: b.t.artifactRoot }),
      /immutable after the first append/,
    );
    t.equal(loaded.run.config, config, 'the open run keeps its config');
  } finally {
    b.ctx.store.release(loaded.run);
  }
  t.ok((await readFile(path)).equals(before), 'run-config.json bytes unchanged');
});
