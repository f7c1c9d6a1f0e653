import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { bridgeUrl } from '../cli/env.js';
import { SERVICE } from '../contract/version.js';
import { answerLine, type BridgeAnswer, callBridge, TOKEN_UNSENDABLE } from './bridge-client.js';
import {
  accessToken,
  type ConnectorConfig,
  ConnectorConfigError,
  defaultConnectorConfig,
  findConnectorConfig,
  parseConnectorConfig,
} from './config.js';
import { readConfig } from './files.js';
import { configPath } from './install.js';
import { hookStates, mcpState } from './json-config.js';
import { ConfigFileError, parseJson } from './json-edit.js';
import { listenerUids } from './listener-owner.js';
import type { EntryState, Launcher } from './ours.js';
import { isOutboxFileName, outboxDir } from './outbox.js';
import { RUNTIMES } from './runtimes.js';
import type { ConfigFile, RuntimeTable } from './table.js';
import { parseToml, tomlMcpState } from './toml-edit.js';

/**
 * `harness doctor`: the user's set-up, one check a line. Each check answers what is wrong and what
 * to do; a runtime that is not installed is no failure, one installed with entries missing is.
 */
export interface Check {
  ok: boolean;
  /** A check that is not ok but does not fail the set-up: shown as a warning. */
  warn?: boolean;
  what: string;
  /** For a failure or a warning: what to do. */
  todo?: string;
}

export interface DoctorRequest {
  projectDir: string;
  home: string;
  env: NodeJS.ProcessEnv;
  launcher: Launcher;
}

const START_BRIDGE = 'start it: `npm start` in the harness checkout, or `harness bridge`';

export async function doctor(req: DoctorRequest): Promise<Check[]> {
  const { check: configCheck, config } = await connectorCheck(req);
  const checks = await bridgeChecks(req, config);
  for (const table of Object.values(RUNTIMES)) checks.push(...(await runtimeChecks(req, table)));
  checks.push(configCheck);
  if (config !== null) checks.push(await artifactRootCheck(config));
  checks.push(await outboxCheck(req.home));
  return checks;
}

/** The connector.json the project's sessions would read; null config when it is invalid. */
async function connectorCheck(req: DoctorRequest): Promise<{ check: Check; config: ConnectorConfig | null }> {
  const found = await findConnectorConfig(req.projectDir, req.home);
  if (found === null)
    return {
      check: { ok: true, what: 'connector.json: none: defaults apply' },
      config: defaultConnectorConfig(req.projectDir),
    };
  try {
    const config = parseConnectorConfig(found.text, found.file, found.projectDir);
    return { check: { ok: true, what: `connector.json: ${found.file}` }, config };
  } catch (err) {
    if (!(err instanceof ConnectorConfigError)) throw err;
    const check = {
      ok: false,
      what: `connector.json ${found.file}: ${err.problems.join('; ')}`,
      todo: 'fix it, or delete it for the defaults',
    };
    return { check, config: null };
  }
}

async function bridgeChecks(req: DoctorRequest, config: ConnectorConfig | null): Promise<Check[]> {
  let url: URL;
  try {
    url = bridgeUrl(req.env);
  } catch (err) {
    return [{ ok: false, what: 'HARNESS_BRIDGE_URL', todo: (err as Error).message }];
  }
  let token: string | null;
  let tokenProblem: string | null = null;
  try {
    token = await accessToken(config ?? defaultConnectorConfig(req.projectDir), req.env);
  } catch (err) {
    token = null;
    tokenProblem = (err as Error).message;
  }
  const origin = url.origin;
  // Without a token the bridge still answers (its public health): enough to tell that it is up.
  const health = (t: string) => callBridge({ url, token: t }, 'GET', '/health', undefined, 3000);
  let a = await health(token ?? '');
  // A token the client cannot send says nothing of the bridge: it is asked again without one.
  const unsendable = a.status === 0 && (a as { why: string }).why === TOKEN_UNSENDABLE;
  if (unsendable) a = await health('');
  const checks: Check[] = [];
  if (a.status === 0)
    checks.push({ ok: false, what: `bridge at ${origin}: ${answerLine(a)}`, todo: START_BRIDGE });
  else if (a.status !== 401 && (a as BridgeAnswer).body['service'] !== SERVICE)
    checks.push({
      ok: false,
      what: `bridge at ${origin}: not a harness bridge (${a.status})`,
      todo: 'set HARNESS_BRIDGE_URL',
    });
  else checks.push({ ok: true, what: `bridge at ${origin} answers` }, await bridgeUserCheck(url));
  if (token === null)
    checks.push({
      ok: false,
      what: `access token: ${tokenProblem ?? 'none'}`,
      todo: 'set HARNESS_BRIDGE_ACCESS_TOKEN (from ~/.harness/dev/agent.env), or name agent.env as tokenFile in .harness/connector.json',
    });
  else if (unsendable)
    checks.push({
      ok: false,
      what: `access token: ${TOKEN_UNSENDABLE}`,
      todo: 'use the token `harness init` wrote (~/.harness/dev/agent.env), or name agent.env as tokenFile in .harness/connector.json',
    });
  else if (a.status === 200) checks.push({ ok: true, what: 'access token accepted' });
  else if (a.status !== 0)
    checks.push({
      ok: false,
      what: `access token refused (${answerLine(a)})`,
      todo: "use the bridge's own: its dev directory's agent.env (a restarted bridge may have new credentials)",
    });
  return checks;
}

const SEPARATE_USER =
  "an agent running as this user can read the bridge's credentials (its /proc/<pid>/environ, its credential files) and approve its own Red Zone actions; for separation run the bridge as its own user (docs/operations.md)";

/**
 * Whether the bridge runs as the user running this check, who is the user its agents run as
 * (doctor runs on the agent's side): told by the owner of the socket listening on the bridge's
 * port, as the kernel reports it. A bridge of the same user is the quick start's one-user set-up:
 * a warning, not a failure.
 */
async function bridgeUserCheck(url: URL): Promise<Check> {
  const uids = await listenerUids(Number(url.port || '80'));
  const me = process.getuid?.();
  if (uids === null || uids.length === 0 || me === undefined)
    return {
      ok: false,
      warn: true,
      what: 'cannot tell which user the bridge runs as',
      todo: `no listening socket on port ${url.port || '80'} in /proc/net/tcp; if it runs as this user, ${SEPARATE_USER}`,
    };
  if (uids.includes(me))
    return { ok: false, warn: true, what: `bridge runs as this user (uid ${me})`, todo: SEPARATE_USER };
  return { ok: true, what: `bridge runs as another user (uid ${uids.join(', ')})` };
}

async function runtimeChecks(req: DoctorRequest, table: RuntimeTable): Promise<Check[]> {
  const checks: Check[] = [];
  for (const scope of ['project', 'user'] as const) {
    const file = configPath(req, table.hooksFile[scope]);
    const fix = `run \`harness connect ${table.name} ${scope === 'user' ? '--user' : `--project ${req.projectDir}`}\``;
    try {
      const text = await readConfig(file);
      const states = text === null ? null : hookStates(parseJson(file, text), table, req.launcher);
      if (states === null || Object.values(states).every((s) => s === 'absent')) continue;
      const problems = Object.entries(states)
        .filter(([, s]) => s !== 'current')
        .map(([kind, s]) => `${table.events[kind as keyof typeof states]} hook ${describe(s)}`);
      const mcp = await mcpFileState(req, table.mcpFile[scope]);
      if (mcp !== 'current') problems.push(`MCP server ${describe(mcp)}`);
      const what = `${table.label} (${scope}: ${file})`;
      checks.push(
        problems.length === 0
          ? { ok: true, what: `${what}: hooks and MCP server intact` }
          : { ok: false, what: `${what}: ${problems.join(', ')}`, todo: fix },
      );
    } catch (err) {
      if (!(err instanceof ConfigFileError)) throw err;
      checks.push({ ok: false, what: `${table.label} (${scope}): ${err.message}`, todo: 'fix the file' });
    }
  }
  return checks.length > 0 ? checks : [{ ok: true, what: `${table.label}: not installed` }];
}

function describe(state: EntryState): string {
  return {
    current: 'intact',
    stale: 'out of date (another harness path or settings)',
    absent: 'missing',
    foreign: 'taken by another server',
  }[state];
}

async function mcpFileState(req: DoctorRequest, f: ConfigFile): Promise<EntryState> {
  const path = configPath(req, f);
  const text = (await readConfig(path)) ?? '';
  return f.format === 'toml'
    ? tomlMcpState(parseToml(path, text), req.launcher)
    : mcpState(parseJson(path, text), req.launcher);
}

async function artifactRootCheck(config: ConnectorConfig): Promise<Check> {
  const st = await stat(config.artifactRoot).catch(() => null);
  if (st?.isDirectory()) return { ok: true, what: `artifact root ${config.artifactRoot}` };
  return {
    ok: false,
    what: `artifact root ${config.artifactRoot}: ${st === null ? 'missing' : 'not a directory'}`,
    todo: 'create it, or set artifactRoot in connector.json',
  };
}

async function outboxCheck(home: string): Promise<Check> {
  const dir = outboxDir(home);
  const names = (await readdir(dir).catch(() => [] as string[])).filter(isOutboxFileName);
  let events = 0;
  let bytes = 0;
  for (const name of names) {
    const text = await readFile(join(dir, name), 'utf8').catch(() => '');
    events += text.split('\n').filter((l) => l !== '').length;
    bytes += Buffer.byteLength(text);
  }
  if (events === 0) return { ok: true, what: 'outbox: empty' };
  return {
    ok: false,
    what: `outbox ${dir}: ${events} event${events === 1 ? '' : 's'} (${bytes} bytes) waiting`,
    todo: 'start the bridge, then `harness outbox flush`',
  };
}
