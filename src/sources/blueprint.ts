import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { ADAPTER_MAX_BYTES, parseAdapter } from '../validators/adapter.js';
import { type BridgeCall, createFreshRun, postSourceEvent, refusalLine, SourceError } from './client.js';

interface BlueprintNode {
  id: string;
  required: boolean;
  artifact: string | null;
}

/**
 * Judges an adapter file as the bridge will (parseAdapter), before anything is posted: an adapter
 * that is missing, too large or invalid is a usage error. Returns its absolute path.
 */
export async function checkAdapterFile(file: string): Promise<string> {
  const path = resolve(file);
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new Error('not a regular file');
    if (info.size > ADAPTER_MAX_BYTES) throw new Error(`larger than ${ADAPTER_MAX_BYTES} bytes`);
    parseAdapter(await readFile(path), { rootKind: 'adapter-root', path });
  } catch (err) {
    throw new SourceError(`adapter ${basename(path)}: ${(err as Error).message}`, 2);
  }
  return path;
}

/** `blueprint-20250101T120000Z-1a2b3c`: unique, and a blueprint by its name. */
export function blueprintRunId(now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `blueprint-${stamp}-${randomBytes(3).toString('hex')}`;
}

/**
 * Posts the static topology of a run as a new `blueprint` run (source `static-blueprint`). The
 * run is created with the adapter (the bridge's default when none is given), so the shape comes
 * from the bridge that seals it, never from a second reading of the adapter here; then one
 * `node.entered` event per required node, in lane order, each naming the node's artifact and
 * keeping the node `pending` (a blueprint describes the lane; nothing ran).
 */
export async function blueprint(
  call: BridgeCall,
  opts: { adapterPath?: string; as?: string },
): Promise<{ runId: string; nodes: string[] }> {
  const runId = opts.as ?? blueprintRunId();
  if (!RUN_ID_PATTERN.test(runId)) throw new SourceError('--as is not a canonical run ID', 2);
  const body = {
    id: runId,
    runMode: 'blueprint' as const,
    eventSource: 'static-blueprint' as const,
    title: `blueprint of ${opts.adapterPath === undefined ? 'the default adapter' : basename(opts.adapterPath)}`,
    ...(opts.adapterPath === undefined ? {} : { adapterPath: opts.adapterPath }),
  };
  if (!(await createFreshRun(call, body)))
    throw new SourceError(`run ${runId} exists already: a blueprint is posted as a new run`, 1);
  const view = await call(`/runs/${encodeURIComponent(runId)}`, { method: 'GET' });
  if (view.status !== 200) throw new SourceError(`cannot read run ${runId}: ${refusalLine(view)}`, 1);
  const nodes = ((view.body['run'] as { nodes: BlueprintNode[] }).nodes ?? []).filter((n) => n.required);
  for (const node of nodes) {
    const artifact = node.artifact === null ? '' : `; its artifact is ${node.artifact}`;
    const event = {
      type: 'node.entered',
      actor: 'harness',
      runMode: 'blueprint',
      eventSource: 'static-blueprint',
      nodeId: node.id,
      nodeState: 'pending',
      status: 'ok',
      message: `blueprint: ${node.id} is required${artifact}`,
      ...(node.artifact === null ? {} : { artifact: node.artifact }),
    };
    await postSourceEvent(call, runId, event, `node ${node.id} (run ${runId})`);
  }
  return { runId, nodes: nodes.map((n) => n.id) };
}
