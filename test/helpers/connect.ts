import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';
import t, { type Test } from 'tap';
import { CLI, ROOT } from './paths.js';

/**
 * For the `harness connect` and `harness doctor` tests: a temporary HOME and project, seeded with
 * a runtime's configuration files from test/fixtures/connect/<runtime>/{home,project}, and the
 * CLI run as a child process in them.
 */
export const RUNTIME_NAMES = ['claude-code', 'codex', 'gemini'] as const;
export type RuntimeName = (typeof RUNTIME_NAMES)[number];
export const FIXTURES = join(ROOT, 'test', 'fixtures', 'connect');

/** Hook and MCP files per runtime and scope, relative to the project or the home folder. */
export const FILES: Record<RuntimeName, Record<'project' | 'user', { hooks: string; mcp: string }>> = {
  'claude-code': {
    project: { hooks: 'project/.claude/settings.json', mcp: 'project/.mcp.json' },
    user: { hooks: 'home/.claude/settings.json', mcp: 'home/.claude.json' },
  },
  codex: {
    project: { hooks: 'project/.codex/hooks.json', mcp: 'home/.codex/config.toml' },
    user: { hooks: 'home/.codex/hooks.json', mcp: 'home/.codex/config.toml' },
  },
  gemini: {
    project: { hooks: 'project/.gemini/settings.json', mcp: 'project/.gemini/settings.json' },
    user: { hooks: 'home/.gemini/settings.json', mcp: 'home/.gemini/settings.json' },
  },
};

export const EVENTS: Record<RuntimeName, string[]> = {
  'claude-code': ['SessionStart', 'PreToolUse', 'PostToolUse', 'Stop'],
  codex: ['SessionStart', 'PreToolUse', 'PostToolUse', 'Stop'],
  gemini: ['SessionStart', 'BeforeTool', 'AfterTool', 'AfterAgent'],
};

export interface Sandbox {
  root: string;
  home: string;
  project: string;
  env: Record<string, string>;
}

/** A temporary root holding `home/` and `project/`; with `runtime`, seeded with its fixtures. */
export async function sandbox(
  t: { teardown(fn: () => unknown): void },
  runtime?: RuntimeName,
): Promise<Sandbox> {
  const root = await mkdtemp(join(tmpdir(), 'harness-connect-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const home = join(root, 'home');
  const project = join(root, 'project');
  await mkdir(home);
  await mkdir(project);
  if (runtime !== undefined) await cp(join(FIXTURES, runtime), root, { recursive: true });
  return { root, home, project, env: { PATH: process.env['PATH'] ?? '', HOME: home } };
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function harness(args: string[], env: Record<string, string>, cwd?: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env, cwd }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** `harness connect` for `runtime` in the sandbox's project (or `--user`), with `extra` options. */
export function connect(
  s: Sandbox,
  runtime: string,
  scope: 'project' | 'user',
  ...extra: string[]
): Promise<Run> {
  const where = scope === 'user' ? ['--user'] : ['--project', s.project];
  return harness(['connect', runtime, ...where, ...extra], s.env, s.project);
}

/** Every file under `dir`: its bytes and mode, by relative path. Compared to see that nothing changed. */
export async function snapshot(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const mode = (await stat(path)).mode.toString(8);
    files.set(relative(dir, path), entry.isFile() ? `${mode} ${await readFile(path, 'base64')}` : mode);
  }
  return files;
}

export const read = (s: Sandbox, rel: string) => readFile(join(s.root, rel), 'utf8');
export const readOrNull = (s: Sandbox, rel: string) => read(s, rel).catch(() => null);

/** The parsed value of a configuration file: JSONC or TOML, by its name. */
export function parsed(rel: string, text: string): Record<string, any> {
  return rel.endsWith('.toml') ? parseToml(text) : parseJsonc(text);
}

/** The command `harness connect` writes: node and the CLI entry, as the connecting process runs them. */
export const hookCommandFor = (runtime: string) => `${process.execPath} ${CLI} hook ${runtime}`;

/** The groups under `event` whose hooks run `harness hook <runtime>`, in the parsed hooks file. */
export function ourGroups(value: Record<string, any>, event: string, runtime: string): any[] {
  const list: any[] = value['hooks']?.[event] ?? [];
  return list.filter((g) =>
    (g?.hooks ?? []).some(
      (h: any) => typeof h?.command === 'string' && h.command.endsWith(` hook ${runtime}`),
    ),
  );
}

export type Scope = 'project' | 'user';

/** One test per runtime and scope, each in a fresh sandbox seeded with that runtime's fixtures. */
export function eachInstall(
  what: string,
  fn: (t: Test, s: Sandbox, runtime: RuntimeName, scope: Scope) => Promise<void>,
): void {
  for (const runtime of RUNTIME_NAMES)
    for (const scope of ['project', 'user'] as const)
      t.test(`${runtime} --${scope}: ${what}`, async (t) => fn(t, await sandbox(t, runtime), runtime, scope));
}
