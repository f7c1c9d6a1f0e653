import { join } from 'node:path';
import { callBridge } from './bridge-client.js';
import { CONNECTOR_FILE } from './config.js';
import type { HookContext } from './context.js';
import { fingerprint } from './state.js';
import type { ConfigFile } from './table.js';

/**
 * After a tool call (and at session start and stop): every artifact the run's adapter names whose
 * file is new or changed gets `artifact.written` for its node, whichever tool wrote it (Codex and
 * Gemini hook only their shell and patch tools, so a proof written by a shell command is found
 * here too); and a change to the runtime's hook configuration or to connector.json is recorded as
 * `gate.fired` with status `warn`, so tampering with the connector shows in the record.
 */
export async function recordChanges(ctx: HookContext): Promise<void> {
  await recordArtifacts(ctx);
  await recordConfigChanges(ctx);
}

/** The node -> artifact path map the bridge resolved for the run (its adapter's, or the defaults). */
export async function fetchArtifactMap(ctx: HookContext): Promise<void> {
  if (ctx.client === null) return;
  const a = await callBridge(
    ctx.client,
    'GET',
    `/runs/${encodeURIComponent(ctx.runId)}?eventLimit=1`,
    undefined,
    ctx.config.deadlineMs,
  );
  const nodes = a.status === 200 ? (a as { body: { run?: { nodes?: unknown } } }).body.run?.nodes : undefined;
  if (!Array.isArray(nodes)) return;
  const map: Record<string, string> = {};
  for (const n of nodes as { id?: unknown; artifact?: unknown }[])
    if (typeof n.id === 'string' && typeof n.artifact === 'string') map[n.id] = n.artifact;
  ctx.memory.artifactMap = map;
}

async function recordArtifacts(ctx: HookContext): Promise<void> {
  if (ctx.memory.artifactMap === null) await fetchArtifactMap(ctx);
  const map = ctx.memory.artifactMap;
  if (map === null) return;
  const seen = ctx.memory.artifacts;
  for (const [nodeId, path] of Object.entries(map)) {
    const fp = fingerprint(join(ctx.config.artifactRoot, path));
    if (!/^\d/.test(fp)) {
      // Gone, a link or not a file: nothing to claim (the bridge would refuse it); forget it so a
      // file written there later is claimed.
      delete seen[path];
      continue;
    }
    if (seen[path] === fp) continue;
    // The id follows from the file's fingerprint, and the event's time is the file's mtime: two
    // hook calls that see the same write send the same event, and the bridge keeps one.
    const id = `${ctx.table.name}-artifact-${nodeId}-${fp}`;
    const mtimeMs = Number(fp.split(':')[1]);
    await ctx.send(
      {
        type: 'artifact.written',
        nodeId,
        artifact: path,
        status: 'passed',
        nodeState: 'passed',
        message: `${path} written (seen by the ${ctx.table.label} connector)`,
        ts: new Date(Math.floor(mtimeMs)).toISOString(),
      },
      ctx.config.deadlineMs,
      id,
    );
    seen[path] = fp;
  }
}

function watchedFiles(ctx: HookContext): string[] {
  const { table, config, home } = ctx;
  const at = (f: ConfigFile) => join(f.scope === 'project' ? config.projectDir : home, f.path);
  const files = [
    table.hooksFile.project,
    table.hooksFile.user,
    table.mcpFile.project,
    table.mcpFile.user,
    ...table.otherConfigFiles,
  ].map(at);
  files.push(config.file ?? join(config.projectDir, CONNECTOR_FILE));
  return [...new Set(files)];
}

async function recordConfigChanges(ctx: HookContext): Promise<void> {
  const changed: string[] = [];
  for (const file of watchedFiles(ctx)) {
    const fp = fingerprint(file);
    const before = ctx.memory.configs[file];
    ctx.memory.configs[file] = fp;
    // The first look is the baseline: what was there when the run's first hook ran.
    if (before !== undefined && before !== fp)
      changed.push(`${file} (${fp === 'absent' ? 'removed' : before === 'absent' ? 'created' : 'changed'})`);
  }
  if (changed.length === 0) return;
  await ctx.send({
    type: 'gate.fired',
    nodeId: 'redzone',
    status: 'warn',
    message: `connector configuration changed during the run: ${changed.join(', ')}`.slice(0, 4000),
  });
}
