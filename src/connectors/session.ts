import { RUN_ID_PATTERN } from '../contract/limits.js';
import { fetchArtifactMap, recordChanges } from './changes.js';
import { recordCompletion } from './completion.js';
import type { ConnectorConfig } from './config.js';
import { accessToken } from './config.js';
import { type HookContext, note, refusal } from './context.js';
import { freshEventId } from './names.js';
import { type Event, enqueue, OutboxFullError, type SendResult, send } from './outbox.js';
import type { Payload } from './payload.js';
import type { RedZoneAction } from './redzone.js';
import { decideRedZone } from './redzone-decision.js';
import { loadMemory, memoryFile, saveMemory } from './state.js';
import type { HookAnswer, HookKind, RuntimeTable } from './table.js';

/**
 * The run a session reports to: HARNESS_RUN_ID, else the template (`{runtime}-{session}` by default)
 * with the session id made to fit the run-ID pattern. The same session always maps to the same run,
 * so a resumed session continues it. A session id that cannot be made to fit is replaced by its
 * digest, never truncated into another session's run.
 */
export async function runIdFor(
  template: string,
  runtime: string,
  sessionId: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const fixed = env['HARNESS_RUN_ID'];
  if (fixed !== undefined && fixed !== '') return fixed;
  const session = sessionId.replace(/[^A-Za-z0-9._-]/g, '-');
  const id = template.replaceAll('{runtime}', runtime).replaceAll('{session}', session);
  if (RUN_ID_PATTERN.test(id)) return id;
  const { createHash } = await import('node:crypto');
  return template
    .replaceAll('{runtime}', runtime)
    .replaceAll('{session}', createHash('sha256').update(sessionId).digest('hex').slice(0, 32));
}

/** One hook call past its Red Zone check: the run's memory, the bridge, and the step for its kind. */
export async function runSession(call: {
  table: RuntimeTable;
  kind: HookKind;
  payload: Payload;
  config: ConnectorConfig;
  env: NodeJS.ProcessEnv;
  cwd: string;
  action: RedZoneAction | null;
}): Promise<HookAnswer> {
  const { table, kind, payload, config, env, cwd, action } = call;
  const home = env['HOME'] || (await import('node:os')).homedir();
  const runId = await runIdFor(config.runId, table.name, payload.session_id, env);
  if (!RUN_ID_PATTERN.test(runId))
    return { exitCode: 1, stderr: `harness hook: the run ID ${JSON.stringify(runId)} is not canonical\n` };
  const token = await accessToken(config, env);
  const { bridgeUrl } = await import('../cli/env.js');
  const client = token === null ? null : { url: bridgeUrl(env), token };
  const memFile = memoryFile(home, runId);
  const memory = loadMemory(memFile);
  const before = JSON.stringify(memory);
  const ctx: HookContext = {
    table,
    payload,
    config,
    client,
    home,
    runId,
    cwd,
    memory,
    notes:
      token === null
        ? [
            'no access token (HARNESS_BRIDGE_ACCESS_TOKEN, or tokenFile in connector.json): events wait in the outbox',
          ]
        : [],
    warn: token === null,
    send: async (fields, deadlineMs = config.deadlineMs, id) =>
      sendEvent(ctx, { id: id ?? (await freshEventId(table.name)), ...fields }, deadlineMs),
  };
  let answer: HookAnswer;
  switch (kind) {
    case 'session-start':
      await sessionStart(ctx);
      await recordChanges(ctx);
      answer = { exitCode: 0 };
      break;
    case 'pre-tool':
      answer = await decideRedZone(ctx, action!);
      break;
    case 'post-tool':
      await recordChanges(ctx);
      answer = { exitCode: 0 };
      break;
    case 'stop':
      await recordChanges(ctx);
      answer = await recordCompletion(ctx);
      break;
  }
  if (JSON.stringify(ctx.memory) !== before) saveMemory(memFile, ctx.memory);
  return withNotes(answer, ctx);
}

function withNotes(answer: HookAnswer, ctx: HookContext): HookAnswer {
  if (ctx.notes.length === 0) return answer;
  const stderr = (answer.stderr ?? '') + ctx.notes.map((n) => `harness hook: ${n}\n`).join('');
  return { ...answer, stderr, exitCode: answer.exitCode === 0 && ctx.warn ? 1 : answer.exitCode };
}

async function sendEvent(ctx: HookContext, fields: Event, deadlineMs: number): Promise<SendResult> {
  const event: Event = {
    ...fields,
    actor: ctx.table.actor,
    runMode: 'live',
    eventSource: 'bridge',
    ts: fields['ts'] ?? new Date().toISOString(),
    // A run this connector has not started yet is created by whichever event reaches it first,
    // and that event must seal the run's artifact root and adapter.
    ...(ctx.memory.sessions.length === 0 || fields['type'] === 'agent.connected'
      ? setupFields(ctx.config)
      : {}),
  };
  try {
    if (ctx.client === null) {
      await enqueue(ctx.home, ctx.runId, event);
      return { kind: 'queued', why: 'no access token', flushed: null };
    }
    const r = await send(ctx.client, ctx.home, ctx.runId, event, deadlineMs);
    for (const f of r.flushed?.refused ?? [])
      note(ctx, `the bridge refused a queued ${String(f.event['type'])}: ${refusal(f.answer.body)}`, true);
    if (r.kind === 'queued')
      note(ctx, `the bridge did not take ${String(event['type'])} (${r.why}); it waits in the outbox`, false);
    if (r.kind === 'refused' && !expectedRefusal(r.answer.body))
      note(ctx, `the bridge refused ${String(event['type'])}: ${refusal(r.answer.body)}`, true);
    return r;
  } catch (err) {
    if (err instanceof OutboxFullError)
      note(ctx, `${err.message}; ${String(event['type'])} was not recorded`, true);
    throw err;
  }
}

function setupFields(config: ConnectorConfig): Record<string, string> {
  return {
    artifactRoot: config.artifactRoot,
    ...(config.adapterPath === undefined ? {} : { adapterPath: config.adapterPath }),
  };
}

/** Refusals that are answers, not faults: the finish line not yet met, a closed run. */
function expectedRefusal(body: Record<string, unknown>): boolean {
  return ['finish_line_blocked', 'run_closed'].includes(String(body['error']));
}

/** SessionStart: `agent.connected` (and `node.entered intake` on the run's first session). */
async function sessionStart(ctx: HookContext): Promise<void> {
  const { table, payload, memory } = ctx;
  const trigger = table.triggerFields.map((f) => payload[f]).find((v) => typeof v === 'string');
  const model = typeof payload['model'] === 'string' ? `, model ${payload['model']}` : '';
  const first = memory.sessions.length === 0;
  await ctx.send({
    type: 'agent.connected',
    nodeId: 'intake',
    status: 'ok',
    message: `${table.label} connected (session ${payload.session_id}${model}, trigger ${String(trigger ?? 'unknown')})`,
  });
  if (first)
    await ctx.send({
      type: 'node.entered',
      nodeId: 'intake',
      status: 'ok',
      message: `${table.label} started in ${ctx.cwd}`,
    });
  if (!memory.sessions.includes(payload.session_id)) memory.sessions.push(payload.session_id);
  if (memory.artifactMap === null) await fetchArtifactMap(ctx);
}
