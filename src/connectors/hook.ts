import { isAbsolute } from 'node:path';
import { NOT_AGENT_SIDE } from '../contract/agent-side.js';
import { type ConnectorConfig, ConnectorConfigError, loadConfig } from './config.js';
import { NOT_A_PAYLOAD, parsePayload } from './payload.js';
import { matchRedZone } from './redzone.js';
import type { HookAnswer, HookKind, RuntimeTable } from './table.js';

function kindOf(table: RuntimeTable, event: string): HookKind | undefined {
  return (Object.keys(table.events) as HookKind[]).find((k) => table.events[k] === event);
}

/**
 * `harness hook <runtime>`: one payload in, one answer out. Never throws: whatever goes wrong is
 * an answer, and only a Red Zone decision (or a stop gate) ever blocks.
 */
export async function runHook(
  table: RuntimeTable,
  input: string,
  env: NodeJS.ProcessEnv,
): Promise<HookAnswer> {
  for (const name of NOT_AGENT_SIDE)
    if (env[name])
      return {
        exitCode: 1,
        stderr: `harness hook refuses to run: ${name} must not be in an agent's environment\n`,
      };
  const payload = parsePayload(input);
  if (payload === null) return { exitCode: 1, stderr: `${NOT_A_PAYLOAD}\n` };
  const kind = kindOf(table, payload.hook_event_name);
  if (kind === undefined) return { exitCode: 0 };
  const cwd = typeof payload.cwd === 'string' && isAbsolute(payload.cwd) ? payload.cwd : process.cwd();
  let config: ConnectorConfig;
  try {
    config = await loadConfig(env, cwd);
  } catch (err) {
    const why = err instanceof ConnectorConfigError ? err.message : String(err);
    // Red Zone rules that cannot be read cannot be checked: a tool call is held, not let through.
    if (kind === 'pre-tool')
      return {
        exitCode: 2,
        stderr: `Red Zone: the connector configuration cannot be read (${why}); every tool call is held until it is fixed\n`,
      };
    return { exitCode: 1, stderr: `harness hook: ${why}\n` };
  }
  try {
    // A tool call no rule holds is the common case: it loads nothing more, reads no run memory and
    // contacts no bridge.
    const action =
      kind === 'pre-tool'
        ? await matchRedZone(
            table,
            config.redZone,
            payload.tool_name ?? '',
            payload.tool_input ?? {},
            cwd,
            config.projectDir,
          )
        : null;
    if (kind === 'pre-tool' && action === null) return { exitCode: 0 };
    const { runSession } = await import('./session.js');
    return await runSession({ table, kind, payload, config, env, cwd, action });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (kind === 'pre-tool' && config.redZone.length > 0)
      return { exitCode: 2, stderr: `Red Zone: the connector failed (${why}); blocked\n` };
    return { exitCode: 1, stderr: `harness hook: ${why}\n` };
  }
}
