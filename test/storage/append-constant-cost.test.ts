import { type FileHandle, open } from 'node:fs/promises';
import t from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { pathOfFd } from '../helpers/patch-fs.js';

/**
 * CONTRACT 7: "Appending costs the same at event 100000 as at event 10: no whole-journal reread".
 * bench:ingest measures the cost; this proves the structure: once a run is open, appending to it
 * reads nothing of its journal, however long the journal is, so no append's cost grows with it.
 */
t.test('appends to an open run read nothing of its journal', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const journal = runPaths(b.t.dataDir, 'cc').journal;
  const post = async (from: number) => {
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        b.req('POST', '/runs/cc/events', ev({ id: `e${from + i}`, nodeId: 'implement' })),
      ),
    );
    return answers.every((r) => r.status === 201);
  };
  for (let k = 0; k < 5; k++) t.ok(await post(k * 100), `events ${k * 100} to ${k * 100 + 99}`);

  // Every FileHandle read in this process (the bridge runs in it), by the file it reads.
  const probe = await open(journal, 'r');
  const proto = Object.getPrototypeOf(probe) as FileHandle;
  await probe.close();
  const original = proto.read;
  const reads: string[] = [];
  proto.read = function (this: FileHandle, ...args: unknown[]) {
    reads.push(pathOfFd(this.fd));
    return (original as (...a: unknown[]) => ReturnType<FileHandle['read']>).apply(this, args);
  } as FileHandle['read'];
  t.teardown(() => {
    proto.read = original;
  });
  const journalReads = () => reads.filter((p) => p === journal).length;

  for (let k = 5; k < 10; k++) t.ok(await post(k * 100), `events ${k * 100} to ${k * 100 + 99}`);
  t.equal(journalReads(), 0, '500 appends to a journal of 500 events read none of it');
  // The probe sees a journal read where there is one: a read of the run's events.
  t.equal((await b.req('GET', '/runs/cc?eventLimit=5')).status, 200);
  t.ok(journalReads() > 0, 'a read of the run reads its journal, and the probe sees it');
});
