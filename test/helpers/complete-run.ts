import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Test } from 'tap';
import { DEFAULT_ARTIFACT_BY_NODE, NODE_IDS } from '../../src/contract/index.js';
import { ev, type TestBridge } from './bridge.js';
import { appendedRecords } from './expect.js';

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

const completion = (over: Record<string, unknown> = {}) =>
  ev({ type: 'run.completed', nodeId: 'handoff', status: 'passed', ...over });

export const complete = (b: TestBridge, runId: string) =>
  b.req('POST', `/runs/${runId}/events`, completion());

/**
 * Expects a refused completion (409 finish_line_blocked with `problems` failing checks): exactly
 * one run.blocked record appended, every earlier record byte-for-byte unchanged, the completion
 * itself not stored, and the run now reads as blocked.
 */
export async function expectBlocked(t: Test, b: TestBridge, runId: string, problems: number, over = {}) {
  const before = await b.journal(runId);
  const body = completion({ id: `done-${Math.random().toString(36).slice(2)}`, ...over });
  const r = await b.req('POST', `/runs/${runId}/events`, body);
  t.equal(r.status, 409, JSON.stringify(r.body));
  t.equal(r.body['error'], 'finish_line_blocked');
  t.equal(
    r.body['problems'].length,
    problems,
    `${problems} failing check(s): ${JSON.stringify(r.body['problems'])}`,
  );
  const added = appendedRecords(t, before, await b.journal(runId));
  t.equal(added.length, 1, 'exactly one record appended');
  t.match(added[0]?.event, { type: 'run.blocked', actor: 'system', status: 'blocked' });
  t.not(added[0]?.event.id, body['id'], 'the completion itself is not stored');
  const view = await b.req('GET', `/runs/${runId}`);
  t.equal(view.body['run'].status, 'blocked');
  return { r, blocked: added[0]! };
}
