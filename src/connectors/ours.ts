import { HOOK_KINDS, type HookKind, type RuntimeTable } from './table.js';

/**
 * What `harness connect` writes into a runtime's configuration, and the one test of whether an
 * entry found there is ours. install, remove and doctor all recognise our entries through
 * `isOurCommandLine`: an entry it does not match is someone else's and is never touched.
 */

/** Where the CLI is: the node binary and the `harness` entry (dist/src/cli/main.cjs), both absolute. */
export interface Launcher {
  node: string;
  entry: string;
}

/** A word for `sh`: as it is when it holds only safe characters, else in single quotes. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * A command line is ours when it runs an entry named `main.cjs` with `tail` (`hook <runtime>`,
 * `mcp`) as its last words. The entry's folder is not compared: an install from another
 * checkout, or an older path of this one, is still ours and is replaced, never duplicated.
 */
export function isOurCommandLine(line: string, tail: string): boolean {
  if (!line.endsWith(` ${tail}`)) return false;
  const head = line.slice(0, -(tail.length + 1));
  return /(?:^|[\s/'"])main\.cjs['"]?$/.test(head);
}

export function hookCommand(launcher: Launcher, runtime: string): string {
  return [launcher.node, launcher.entry, 'hook', runtime].map(shellQuote).join(' ');
}

export function isOurHook(hook: unknown, runtime: string): boolean {
  const command = isObject(hook) ? hook['command'] : undefined;
  return typeof command === 'string' && isOurCommandLine(command, `hook ${runtime}`);
}

/** The matcher group `harness connect` appends under the runtime's event for `kind`. */
export function hookGroup(table: RuntimeTable, kind: HookKind, command: string): Record<string, unknown> {
  const hook = { type: 'command', command, ...table.hookFields, timeout: table.timeouts[kind] };
  const tool = kind === 'pre-tool' || kind === 'post-tool';
  return { ...(tool ? { matcher: table.toolMatcher } : {}), hooks: [hook] };
}

export function hookGroups(
  table: RuntimeTable,
  launcher: Launcher,
): { kind: HookKind; event: string; group: Record<string, unknown> }[] {
  const command = hookCommand(launcher, table.name);
  return HOOK_KINDS.map((kind) => ({
    kind,
    event: table.events[kind],
    group: hookGroup(table, kind, command),
  }));
}

/**
 * Our MCP server entry. It names no credential and no `env`: `harness mcp` reads the access token
 * from the environment the runtime gives it, and these files are often committed or shared.
 */
export function mcpServer(launcher: Launcher): { command: string; args: string[] } {
  return { command: launcher.node, args: [launcher.entry, 'mcp'] };
}

export function isOurMcpServer(server: unknown): boolean {
  if (!isObject(server)) return false;
  const { command, args } = server;
  if (typeof command !== 'string' || !Array.isArray(args) || !args.every((a) => typeof a === 'string'))
    return false;
  return isOurCommandLine([command, ...(args as string[])].map(shellQuote).join(' '), 'mcp');
}

/** How an entry we write stands in a file: as we would write it, ours but older, missing, or someone else's. */
export type EntryState = 'current' | 'stale' | 'absent' | 'foreign';

export function mcpServerState(server: unknown, launcher: Launcher): EntryState {
  if (server === undefined) return 'absent';
  if (!isOurMcpServer(server)) return 'foreign';
  return sameValue(server, mcpServer(launcher)) ? 'current' : 'stale';
}

export const FOREIGN_MCP =
  'its MCP server "harness" is not `harness mcp`: it is left as it is; rename or remove it, then connect again';

/** Deep equality of parsed configuration values (JSON, or TOML with its dates). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Date || b instanceof Date)
    return a instanceof Date && b instanceof Date && String(a.toISOString()) === String(b.toISOString());
  if (Array.isArray(a) || Array.isArray(b))
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameValue(x, b[i]))
    );
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return sameValue(ka, kb) && ka.every((k) => sameValue(a[k], b[k]));
  }
  return Object.is(a, b);
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
