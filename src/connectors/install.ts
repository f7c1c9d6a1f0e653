import { join } from 'node:path';
import { CONNECTOR_FILE, CONNECTOR_SCHEMA, DEFAULT_RUN_ID, parseConnectorConfig } from './config.js';
import { unifiedDiff } from './diff.js';
import { type FilePlan, readConfig, writePlan } from './files.js';
import { installHooks, installMcp, removeHooks, removeMcp } from './json-config.js';
import { ConfigFileError, parseJson } from './json-edit.js';
import type { Launcher } from './ours.js';
import type { ConfigFile, RuntimeTable } from './table.js';
import { installTomlMcp, parseToml, removeTomlMcp } from './toml-edit.js';

/**
 * `harness connect <runtime>`: our hook entries and MCP server into the runtime's configuration,
 * and a connector.json when the project (or the user) has none. Every file is planned, parsed and
 * checked before any is written, so a file that is refused leaves all of them as they were.
 */
export type Scope = 'project' | 'user';

export interface ConnectRequest {
  table: RuntimeTable;
  scope: Scope;
  /** Absolute: project files are relative to it (and a `--user` run's is the cwd). */
  projectDir: string;
  home: string;
  launcher: Launcher;
  remove: boolean;
  dryRun: boolean;
}

export { ConfigFileError };

export function configPath(req: { projectDir: string; home: string }, f: ConfigFile): string {
  return join(f.scope === 'user' ? req.home : req.projectDir, f.path);
}

type Edit = (file: string, text: string) => string;

function hooksEdit(req: ConnectRequest): Edit {
  const { table, launcher } = req;
  return (file, text) => {
    const doc = parseJson(file, text);
    return (req.remove ? removeHooks(doc, table) : installHooks(doc, table, launcher)).text;
  };
}

function mcpEdit(req: ConnectRequest, format: ConfigFile['format']): Edit {
  const { launcher } = req;
  if (format === 'toml')
    return (file, text) => {
      const doc = parseToml(file, text);
      return (req.remove ? removeTomlMcp(doc, launcher) : installTomlMcp(doc, launcher)).text;
    };
  return (file, text) => {
    const doc = parseJson(file, text);
    return (req.remove ? removeMcp(doc, launcher) : installMcp(doc, launcher)).text;
  };
}

/** The files a connect touches, each with its edits in order (Gemini keeps both in one file). */
async function planConfigs(req: ConnectRequest): Promise<FilePlan[]> {
  const hooks = req.table.hooksFile[req.scope];
  const mcp = req.table.mcpFile[req.scope];
  const edits = new Map<string, { file: ConfigFile; edits: Edit[] }>();
  for (const [file, edit] of [
    [hooks, hooksEdit(req)],
    [mcp, mcpEdit(req, mcp.format)],
  ] as const) {
    const path = configPath(req, file);
    const entry = edits.get(path) ?? { file, edits: [] };
    entry.edits.push(edit);
    edits.set(path, entry);
  }
  const plans: FilePlan[] = [];
  for (const [path, { file, edits: list }] of edits) {
    const before = await readConfig(path);
    const after = list.reduce((text, edit) => edit(path, text), before ?? '');
    plans.push({ path, private: file.scope === 'user', before, after });
  }
  return plans;
}

/** `.harness/connector.json` as connect writes it when there is none: the defaults, spelled out. */
async function planConnectorJson(req: ConnectRequest): Promise<FilePlan> {
  const dir = req.scope === 'user' ? req.home : req.projectDir;
  const path = join(dir, CONNECTOR_FILE);
  const before = await readConfig(path);
  if (before !== null) return { path, private: req.scope === 'user', before, after: before };
  const tokenFile = join(req.home, '.harness', 'dev', 'agent.env');
  const config = {
    schema: CONNECTOR_SCHEMA,
    runId: DEFAULT_RUN_ID,
    artifactRoot: '.',
    stopGate: false,
    redZone: [],
    // agent.env (`harness init`) holds the access token alone; its path, never its content, goes here.
    ...((await readConfig(tokenFile)) === null ? {} : { tokenFile }),
  };
  const after = `${JSON.stringify(config, null, 2)}\n`;
  parseConnectorConfig(after, path, dir);
  return { path, private: req.scope === 'user', before: null, after };
}

export interface ConnectResult {
  /** What a person reads: each file's fate, the runtime's note, the next steps. */
  lines: string[];
  changed: boolean;
}

export async function connect(req: ConnectRequest, now: Date = new Date()): Promise<ConnectResult> {
  const plans = await planConfigs(req);
  const connector = req.remove ? null : await planConnectorJson(req);
  const all = connector === null ? plans : [...plans, connector];
  const changed = all.some((p) => p.after !== (p.before ?? ''));
  const { table, scope } = req;
  const where = scope === 'user' ? `user ${req.home}` : `project ${req.projectDir}`;
  const lines = [
    `harness connect ${table.name}${req.remove ? ' --remove' : ''}: ${where}${req.dryRun ? ' (dry run: nothing written)' : ''}`,
  ];
  if (!changed)
    lines.push(req.remove ? 'not installed: nothing to remove' : 'already installed: nothing changed');
  for (const plan of all) {
    const fate =
      plan.before === null
        ? plan.after === ''
          ? 'absent'
          : 'created'
        : plan.before === plan.after
          ? 'unchanged'
          : 'changed';
    if (req.dryRun) {
      lines.push(`${fate === 'created' || fate === 'changed' ? `would be ${fate}` : fate}: ${plan.path}`);
      if (fate === 'created' || fate === 'changed')
        lines.push(
          ...unifiedDiff(plan.path, plan.before ?? '', plan.after)
            .trimEnd()
            .split('\n'),
        );
      continue;
    }
    const backup = await writePlan(plan, now);
    lines.push(`${fate}: ${plan.path}${backup === null ? '' : ` (backup ${backup})`}`);
  }
  if (req.remove) {
    const kept = join(scope === 'user' ? req.home : req.projectDir, CONNECTOR_FILE);
    if ((await readConfig(kept)) !== null)
      lines.push(`left in place: ${kept} (delete it yourself once no runtime reports from here)`);
    if (table.mcpFile[scope].scope !== scope)
      lines.push(
        `note: ${table.label} reads MCP servers from ${configPath(req, table.mcpFile[scope])} only, so harness's server is gone from its sessions in every project`,
      );
    return { lines, changed };
  }
  if (table.installNote !== undefined) lines.push(`note: ${table.installNote}`);
  lines.push(
    'next:',
    '  1. start the bridge: `npm start` in the harness checkout, or `harness bridge`',
    `  2. start ${table.label} in ${scope === 'user' ? 'any project' : req.projectDir}: its session shows up as run \`${table.name}-<session id>\``,
    '  `harness doctor` checks the whole set-up.',
  );
  return { lines, changed };
}
