import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { RedZoneRule } from './config.js';
import type { RuntimeTable } from './table.js';

/** A tool call a Red Zone rule matched: what it is, and the rule that holds it for a human. */
export interface RedZoneAction {
  rule: RedZoneRule;
  /** `command`, `path` or `tool`: what the rule matched on. */
  kind: 'command' | 'path' | 'tool';
  /** The command line, the written path or the tool call, as shown to the human. */
  text: string;
  /**
   * The approval scope: the rule's scope and a digest of the exact action. A grant therefore
   * allows this action and no other the rule matches (`git push origin main`, not `git push -f`),
   * and a second action of the same rule is a new request rather than a clash with a pending one.
   */
  scope: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The shell command line of a shell tool call: a string, or an argv array (Codex's shell tool). */
export function shellCommand(
  table: RuntimeTable,
  toolName: string,
  input: Record<string, unknown>,
): string | undefined {
  if (!table.shellTools.includes(toolName)) return undefined;
  const c = input['command'];
  if (Array.isArray(c)) return c.filter((a) => typeof a === 'string').join(' ');
  return str(c);
}

/** The files a patch names (`*** Add File: p`, `*** Update File: p`, `*** Delete File: p`, `*** Move to: p`). */
function patchPaths(text: string): string[] {
  return [...text.matchAll(/^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$/gm)].map((m) =>
    m[1]!.trim(),
  );
}

/** The paths a tool call writes, as the runtime names them (absolute, or relative to its cwd). */
export function writtenPaths(
  table: RuntimeTable,
  toolName: string,
  input: Record<string, unknown>,
): string[] {
  const fields = table.writeTools[toolName];
  if (fields !== undefined)
    return fields.map((f) => str(input[f])).filter((p): p is string => p !== undefined && p !== '');
  if (table.patchTools.includes(toolName)) {
    const text = ['input', 'patch', 'command'].map((f) => input[f]).find((v) => typeof v === 'string');
    return typeof text === 'string' ? patchPaths(text) : [];
  }
  return [];
}

/** A path as a rule's glob sees it: relative to the project directory, or absolute when outside it. */
export function projectPath(path: string, cwd: string, projectDir: string): string {
  const abs = isAbsolute(path) ? resolve(path) : resolve(cwd, path);
  const rel = relative(projectDir, abs);
  const inside = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
  return inside ? rel.split(sep).join('/') : abs;
}

/** Keys sorted at every depth, so the same tool input always has the same digest. */
function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

async function action(rule: RedZoneRule, kind: RedZoneAction['kind'], text: string): Promise<RedZoneAction> {
  // Loaded only on a match: node:crypto costs half a bare Node start, and most calls match nothing.
  const { createHash } = await import('node:crypto');
  const digest = createHash('sha256').update(`${kind}\0${text}`).digest('hex').slice(0, 12);
  return { rule, kind, text, scope: `${rule.approvalScope}:${digest}` };
}

/** The first rule, in file order, that a tool call matches; null when none does. */
export async function matchRedZone(
  table: RuntimeTable,
  rules: readonly RedZoneRule[],
  toolName: string,
  input: Record<string, unknown>,
  cwd: string,
  projectDir: string,
): Promise<RedZoneAction | null> {
  if (rules.length === 0) return null;
  const command = shellCommand(table, toolName, input);
  const written = writtenPaths(table, toolName, input).map((p) => projectPath(p, cwd, projectDir));
  let glob: ((pattern: string, path: string) => boolean) | undefined;
  for (const rule of rules) {
    if (rule.tool !== undefined && rule.tool === toolName)
      return action(rule, 'tool', `${toolName} ${stableJson(input)}`);
    if (rule.command !== undefined && command !== undefined && rule.command.test(command))
      return action(rule, 'command', command);
    if (rule.path !== undefined && written.length > 0) {
      // Loaded only when a written path meets a path rule: most hook calls never need it.
      glob ??= await import('picomatch').then(
        (m) => (pattern: string, path: string) => m.default.isMatch(path, pattern, { dot: true }),
      );
      const hit = written.find((p) => glob!(rule.path!, p));
      if (hit !== undefined) return action(rule, 'path', hit);
    }
  }
  return null;
}
