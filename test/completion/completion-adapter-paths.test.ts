import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { ADAPTER_ARTIFACT_PATHS_MAX_BYTES, EVENT_MAX_BYTES, NODE_IDS } from '../../src/contract/index.js';
import { cleanup, ev, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { records, writeArtifact } from '../helpers/expect.js';

/**
 * A completion seals every claimed artifact's path into its journal record, so an adapter's
 * artifact paths are bounded (ADAPTER_ARTIFACT_PATHS_MAX_BYTES, as a seal writes them): within
 * the bound the largest event still completes the run; past it the adapter is refused up front,
 * where it used to pass every check and then fail run.completed with a 500 forever.
 */
const SEGMENT = '中'.repeat(80); // 240 bytes: a file name within NAME_MAX

/** 14 paths of `segments` directories each; their sealed size by the limit's own measure. */
function paths(segments: number, tail = '') {
  const map: Record<string, string> = {};
  for (const [i, node] of NODE_IDS.entries())
    map[node] = `${Array.from({ length: segments }, () => SEGMENT).join('/')}${tail}/${i}.txt`;
  const sealed = Object.values(map).reduce((n, p) => n + Buffer.byteLength(JSON.stringify(p)) + 68, 0);
  return { map, sealed };
}

async function withAdapter(b: TestBridge, runId: string, map: Record<string, string>) {
  const adapterPath = join(b.t.artifactRoot, `${runId}-adapter.json`);
  await writeFile(adapterPath, JSON.stringify({ runtime: { artifactByNode: map } }));
  return b.req(
    'POST',
    `/runs/${runId}/events`,
    ev({ type: 'run.created', artifactRoot: b.t.artifactRoot, adapterPath }),
  );
}

t.test('an adapter whose paths would not fit a completion record is refused, nothing stored', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const { map, sealed } = paths(4);
  t.ok(sealed > ADAPTER_ARTIFACT_PATHS_MAX_BYTES, `${sealed} bytes: over the bound`);
  const before = await readdir(b.t.dataDir);
  const r = await withAdapter(b, 'long', map);
  t.equal(r.body['error'], 'adapter_policy_violation', JSON.stringify(r.body).slice(0, 300));
  t.match(r.body['message'], `its paths take ${sealed} bytes as a completion seals them`);
  t.same(await readdir(b.t.dataDir), before, 'no run was created');
});

t.test('an adapter at the bound completes a run with the largest event', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  // Three segments, then a tail that brings the sum as close to the bound as whole bytes allow.
  const base = paths(3);
  const pad = Math.floor((ADAPTER_ARTIFACT_PATHS_MAX_BYTES - base.sealed) / NODE_IDS.length);
  const { map, sealed } = paths(3, `/${'p'.repeat(pad - 1)}`);
  t.ok(
    sealed <= ADAPTER_ARTIFACT_PATHS_MAX_BYTES && sealed > ADAPTER_ARTIFACT_PATHS_MAX_BYTES - 30,
    `${sealed} bytes`,
  );
  t.equal((await withAdapter(b, 'fits', map)).status, 201);
  for (const nodeId of NODE_IDS) {
    await writeArtifact(b.t.artifactRoot, map[nodeId] as string, `artifact of ${nodeId}\n`);
    for (const body of [
      ev({ nodeId }),
      ev({ type: 'artifact.written', nodeId, artifact: map[nodeId] }),
      ev({ type: 'gate.fired', nodeId, nodeState: 'passed', status: 'passed' }),
    ])
      t.equal((await b.req('POST', '/runs/fits/events', body)).status, 201, nodeId);
  }
  // A message of control characters, six bytes each as stored: the event just under its ceiling.
  let size = 0;
  let r: Awaited<ReturnType<typeof b.req>> | undefined;
  for (let n = 2700; n > 2500; n -= 5) {
    r = await b.req(
      'POST',
      '/runs/fits/events',
      ev({
        id: 'done',
        type: 'run.completed',
        nodeId: 'handoff',
        status: 'passed',
        message: '\u0001'.repeat(n),
      }),
    );
    if (r.status !== 413) break;
  }
  t.equal(r?.status, 201, JSON.stringify(r?.body).slice(0, 300));
  const last = records(await b.journal('fits')).at(-1);
  t.equal(last?.['event'].type, 'run.completed');
  size = Buffer.byteLength(JSON.stringify(last?.['event']));
  t.ok(size > EVENT_MAX_BYTES - 64, `the stored event takes ${size} bytes`);
  // The completion seals the adapter it judged under, so a read finds no drift in it.
  const view = (await b.req('GET', '/runs/fits')).body['run'];
  t.same([view.status, view.quarantine], ['completed', null], 'the completed run reads clean');
  t.equal(last?.['seal'].adapterSha256, view.adapter?.sha256, 'the seal records the adapter digest');
});
