import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { NOT_AGENT_SIDE } from '../contract/agent-side.js';

/**
 * `.harness/connector.json`: how a project's agent sessions report to the bridge. Read by every
 * hook call, so it is checked by hand here (no schema compiler in the hook's start), and by
 * `harness connect` and `harness doctor` through the same function: one set of rules.
 */
export const CONNECTOR_SCHEMA = 'harness.connector.v1';
export const CONNECTOR_FILE = join('.harness', 'connector.json');

export interface RedZoneRule {
  /** Exactly one of the three matches: a regular expression on a shell command line, */
  command?: RegExp;
  /** a glob on a path a tool writes (relative to the project directory), */
  path?: string;
  /** or a tool name, exactly. */
  tool?: string;
  approvalOwner: string;
  approvalScope: string;
  /** How long a blocked call waits for the human's decision before it blocks; 0 blocks at once. */
  waitSeconds: number;
}

export interface ConnectorConfig {
  /** The file read, or null when none was found and the defaults apply. */
  file: string | null;
  /** Relative paths resolve here: the folder holding `.harness/`, or the session's cwd. */
  projectDir: string;
  runId: string;
  artifactRoot: string;
  adapterPath?: string;
  tokenFile?: string;
  stopGate: boolean;
  /** Bound on one telemetry request (the hook never holds its agent longer on the bridge). */
  deadlineMs: number;
  /** Bound on `run.completed`, whose finish-line validators take longer than telemetry. */
  completionDeadlineMs: number;
  redZone: RedZoneRule[];
}

export const DEFAULT_RUN_ID = '{runtime}-{session}';
export const WAIT_SECONDS_MAX = 540;

export class ConnectorConfigError extends Error {
  override readonly name = 'ConnectorConfigError';
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: ${problems.join('; ')}`);
  }
}

const TOP_FIELDS = new Set([
  '$comment',
  'schema',
  'runId',
  'artifactRoot',
  'adapterPath',
  'tokenFile',
  'stopGate',
  'deadlineMs',
  'completionDeadlineMs',
  'redZone',
]);
const RULE_FIELDS = new Set(['command', 'path', 'tool', 'approvalOwner', 'approvalScope', 'waitSeconds']);

/**
 * The connector.json that governs a session started in `cwd`: the nearest `.harness/connector.json`
 * from `cwd` up, else the user's `~/.harness/connector.json`. The user's file is a default for
 * every project, so its relative paths resolve against the session's cwd, not the home folder.
 */
export async function findConnectorConfig(
  cwd: string,
  home: string | undefined,
): Promise<{ file: string; text: string; projectDir: string } | null> {
  const userFile = home === undefined ? null : join(home, CONNECTOR_FILE);
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const file = join(dir, CONNECTOR_FILE);
    if (file !== userFile) {
      const text = readText(file);
      if (text !== null) return { file, text, projectDir: dir };
    }
    if (dirname(dir) === dir) break;
  }
  if (userFile === null) return null;
  const text = readText(userFile);
  return text === null ? null : { file: userFile, text, projectDir: resolve(cwd) };
}

/**
 * A small file's text, or null when it cannot be read. Read synchronously: node:fs/promises costs a
 * sixth of a bare Node start to load, and a hook call reads one or two files of a few hundred bytes.
 */
function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** Every problem of a connector.json at once, or the parsed configuration. */
export function parseConnectorConfig(text: string, file: string, projectDir: string): ConnectorConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ConnectorConfigError(file, ['not valid JSON']);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new ConnectorConfigError(file, ['must be a JSON object']);
  const o = raw as Record<string, unknown>;
  const problems: string[] = [];
  for (const k of Object.keys(o)) if (!TOP_FIELDS.has(k)) problems.push(`unknown field ${k}`);
  if (o['schema'] !== CONNECTOR_SCHEMA) problems.push(`schema must be "${CONNECTOR_SCHEMA}"`);
  const str = (k: string): string | undefined => {
    const v = o[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string' || v === '') problems.push(`${k} must be a non-empty string`);
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const int = (k: string, fallback: number, min: number, max: number): number => {
    const v = o[k];
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      problems.push(`${k} must be an integer from ${min} to ${max}`);
      return fallback;
    }
    return v;
  };
  const runId = str('runId') ?? DEFAULT_RUN_ID;
  const unknownPlaceholder = runId.replace(/\{runtime\}|\{session\}/g, '').match(/\{[^}]*\}/);
  if (unknownPlaceholder) problems.push(`runId: unknown placeholder ${unknownPlaceholder[0]}`);
  const at = (p: string) => (isAbsolute(p) ? p : resolve(projectDir, p));
  const artifactRoot = at(str('artifactRoot') ?? '.');
  const adapterPath = str('adapterPath');
  const tokenFile = str('tokenFile');
  if (o['stopGate'] !== undefined && typeof o['stopGate'] !== 'boolean')
    problems.push('stopGate must be true or false');
  const deadlineMs = int('deadlineMs', 2000, 100, 30_000);
  const completionDeadlineMs = int('completionDeadlineMs', 60_000, 1000, 110_000);
  const redZone = rules(o['redZone'], problems);
  if (problems.length > 0) throw new ConnectorConfigError(file, problems);
  return {
    file,
    projectDir,
    runId,
    artifactRoot,
    ...(adapterPath === undefined ? {} : { adapterPath: at(adapterPath) }),
    ...(tokenFile === undefined ? {} : { tokenFile: at(tokenFile) }),
    stopGate: o['stopGate'] === true,
    deadlineMs,
    completionDeadlineMs,
    redZone,
  };
}

/** The configuration of a session with no connector.json: record everything, no Red Zone rule. */
export function defaultConnectorConfig(projectDir: string): ConnectorConfig {
  return {
    file: null,
    projectDir,
    runId: DEFAULT_RUN_ID,
    artifactRoot: projectDir,
    stopGate: false,
    deadlineMs: 2000,
    completionDeadlineMs: 60_000,
    redZone: [],
  };
}

function rules(value: unknown, problems: string[]): RedZoneRule[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    problems.push('redZone must be an array of rules');
    return [];
  }
  const out: RedZoneRule[] = [];
  value.forEach((r: unknown, i) => {
    const at = `redZone[${i}]`;
    if (r === null || typeof r !== 'object' || Array.isArray(r)) {
      problems.push(`${at} must be an object`);
      return;
    }
    const o = r as Record<string, unknown>;
    for (const k of Object.keys(o)) if (!RULE_FIELDS.has(k)) problems.push(`${at}: unknown field ${k}`);
    const kinds = (['command', 'path', 'tool'] as const).filter((k) => o[k] !== undefined);
    if (kinds.length !== 1) problems.push(`${at} needs exactly one of command, path or tool`);
    for (const k of kinds)
      if (typeof o[k] !== 'string' || o[k] === '') problems.push(`${at}.${k} must be a non-empty string`);
    let command: RegExp | undefined;
    if (typeof o['command'] === 'string' && o['command'] !== '') {
      try {
        command = new RegExp(o['command'], 'u');
      } catch {
        problems.push(`${at}.command is not a valid regular expression`);
      }
    }
    for (const k of ['approvalOwner', 'approvalScope'] as const)
      if (typeof o[k] !== 'string' || (o[k] as string).trim() === '')
        problems.push(`${at}.${k} must be a non-empty string`);
    const wait = o['waitSeconds'] ?? 0;
    if (typeof wait !== 'number' || !Number.isInteger(wait) || wait < 0 || wait > WAIT_SECONDS_MAX)
      problems.push(`${at}.waitSeconds must be an integer from 0 to ${WAIT_SECONDS_MAX}`);
    out.push({
      ...(command === undefined ? {} : { command }),
      ...(typeof o['path'] === 'string' ? { path: o['path'] } : {}),
      ...(typeof o['tool'] === 'string' ? { tool: o['tool'] } : {}),
      approvalOwner: String(o['approvalOwner'] ?? ''),
      approvalScope: String(o['approvalScope'] ?? ''),
      waitSeconds: typeof wait === 'number' ? wait : 0,
    });
  });
  return out;
}

/** The access token: the environment's, else the one in the env file connector.json names. */
export async function accessToken(config: ConnectorConfig, env: NodeJS.ProcessEnv): Promise<string | null> {
  const fromEnv = env['HARNESS_BRIDGE_ACCESS_TOKEN'];
  if (fromEnv) return fromEnv;
  if (config.tokenFile === undefined) return null;
  const { parseEnvFile } = await import('../cli/env.js');
  const file = parseEnvFile(readFileSync(config.tokenFile, 'utf8'));
  // The agent's side holds the access token only (SPEC Authentication 7): a file that holds more is
  // the bridge's or the approval shell's, and naming it here would hand those to the agent.
  if (NOT_AGENT_SIDE.some((name) => file[name]))
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
