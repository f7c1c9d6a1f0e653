import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DEFAULT_ARTIFACT_BY_NODE, NODE_IDS } from '../../src/contract/index.js';
import { ev, type TestBridge } from './bridge.js';

/** Writes every default artifact, records it and passes every node: a run ready to complete. */
export async function driveToReady(
  b: TestBridge,
  runId: string,
  contents: Record<string, string> = {},
): Promise<void> {
  const first = await b.req(
    'POST',
    `/runs/${runId}/events`,
    ev({ type: 'run.created', artifactRoot: b.t.artifactRoot }),
  );
  if (first.status !== 201) throw new Error(`create failed: ${JSON.stringify(first.body)}`);
  for (const nodeId of NODE_IDS) {
    const path = DEFAULT_ARTIFACT_BY_NODE[nodeId];
    await mkdir(dirname(join(b.t.artifactRoot, path)), { recursive: true });
    await writeFile(join(b.t.artifactRoot, path), contents[path] ?? `artifact of ${nodeId}\n`);
    for (const body of [
      ev({ nodeId }),
      ev({ type: 'artifact.written', nodeId, artifact: path }),
      ev({ type: 'gate.fired', nodeId, nodeState: 'passed', status: 'passed' }),
    ]) {
      const r = await b.req('POST', `/runs/${runId}/events`, body);
      if (r.status !== 201) throw new Error(`${nodeId}: ${JSON.stringify(r.body)}`);
    }
  }
}

export const complete = (b: TestBridge, runId: string) =>
  b.req('POST', `/runs/${runId}/events`, ev({ type: 'run.completed', nodeId: 'handoff', status: 'passed' }));
