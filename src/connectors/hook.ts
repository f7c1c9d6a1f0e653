import { isAbsolute } from 'node:path';
import {
  type ConnectorConfig,
  ConnectorConfigError,
  defaultConnectorConfig,
  findConnectorConfig,
  parseConnectorConfig,
} from './config.js';
import { matchRedZone } from './redzone.js';
import type { HookAnswer, HookKind, RuntimeTable } from './table.js';

/** One hook payload, as every runtime sends it (RUNTIMES.md "Common input fields"). */
export interface Payload {
  session_id: string;
  hook_event_name: string;
  cwd?: string;
  model?: string;
  tool_name?: string;
  tool_input?: Record<string, unknown>;
  [field: string]: unknown;
}

const NOT_A_PAYLOAD =
  'harness hook: standard input is not a hook payload (a JSON object with session_id and hook_event_name)';

export function parsePayload(text: string): Payload | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
  const p = v as Payload;
  if (typeof p.session_id !== 'string' || p.session_id === '' || typeof p.hook_event_name !== 'string')
    return null;
  if (p.tool_input !== undefined && (p.tool_input === null || typeof p.tool_input !== 'object')) return null;
  return p;
}

function kindOf(table: RuntimeTable, event: string): HookKind | undefined {
  return (Object.keys(table.events) as HookKind[]).find((k) => table.events[k] === event);
}

/** The access token: the environment's, else the one in the env file connector.json names. */
export async function accessToken(config: ConnectorConfig, env: NodeJS.ProcessEnv): Promise<string | null> {
  const fromEnv = env['HARNESS_BRIDGE_ACCESS_TOKEN'];
  if (fromEnv) return fromEnv;
  if (config.tokenFile === undefined) return null;
  const { readFile } = await import('node:fs/promises');
  const { parseEnvFile } = await import('../cli/env.js');
  const file = parseEnvFile(await readFile(config.tokenFile, 'utf8'));
  // The agent's side holds the access token only (SPEC Authentication 7): a file that holds more is
  // the bridge's or the approval shell's, and naming it here would hand those to the agent.
  if (file['HARNESS_HUMAN_APPROVAL_TOKEN'] || file['HARNESS_BRIDGE_INTEGRITY_KEY'])
    throw new Error(
      `tokenFile ${config.tokenFile} holds more than the access token: name agent.env, never dev.env or approve.env`,
    );
  return file['HARNESS_BRIDGE_ACCESS_TOKEN'] || null;
}

/** The access token of a client started in `cwd` (`harness mcp`, `outbox flush`): as a hook finds it. */
export async function clientToken(env: NodeJS.ProcessEnv, cwd: string): Promise<string | null> {
  return env['HARNESS_BRIDGE_ACCESS_TOKEN'] || accessToken(await loadConfig(env, cwd), env);
}

export async function loadConfig(env: NodeJS.ProcessEnv, cwd: string): Promise<ConnectorConfig> {
  const found = await findConnectorConfig(cwd, env['HOME']);
  return found === null
    ? defaultConnectorConfig(cwd)
    : parseConnectorConfig(found.text, found.file, found.projectDir);
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
  for (const name of ['HARNESS_HUMAN_APPROVAL_TOKEN', 'HARNESS_BRIDGE_INTEGRITY_KEY'])
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
