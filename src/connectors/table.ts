/**
 * What the hook engine (hook.ts) and the installer (install.ts) need to know of one agent runtime.
 * Each runtime is a table of facts (SPEC "Typical connector mapping", shared/connectors/RUNTIMES.md):
 * adding a runtime adds a table and its fixtures, never a branch in the engine.
 */

/** The four points of a session the connector records. */
export type HookKind = 'session-start' | 'pre-tool' | 'post-tool' | 'stop';

export const HOOK_KINDS: readonly HookKind[] = ['session-start', 'pre-tool', 'post-tool', 'stop'];

/** How a hook answers the runtime: what it prints on stdout and stderr, and its exit code. */
export interface HookAnswer {
  exitCode: 0 | 1 | 2;
  stdout?: string;
  stderr?: string;
}

/** A configuration file of the runtime, relative to the project directory or to the home directory. */
export interface ConfigFile {
  scope: 'project' | 'user';
  path: string;
  format: 'json' | 'toml';
}

export interface RuntimeTable {
  /** The name `harness connect` and `harness hook` take. */
  name: string;
  label: string;
  /** The seed's neutral actor name for this runtime. */
  actor: 'runtime-a' | 'runtime-b' | 'runtime-c';
  /** The runtime's event name (`hook_event_name`) for each point we record. */
  events: Readonly<Record<HookKind, string>>;
  /** The `matcher` written for tool events: every tool (a Red Zone rule may name any of them). */
  toolMatcher: string;
  /** Hook timeouts as the runtime counts them (`timeoutUnit`), per point. */
  timeouts: Readonly<Record<HookKind, number>>;
  timeoutUnit: 'seconds' | 'milliseconds';
  /** Fields `harness connect` adds to each hook object it writes, beside type, command and timeout. */
  hookFields?: Readonly<Record<string, string>>;
  /** Where the hooks are configured, by install scope. */
  hooksFile: Readonly<Record<'project' | 'user', ConfigFile>>;
  /** Where the MCP server is registered, by install scope, and the key path of the servers table. */
  mcpFile: Readonly<Record<'project' | 'user', ConfigFile>>;
  /** Other files of the runtime that can change its hooks (watched for tampering, never written). */
  otherConfigFiles: readonly ConfigFile[];
  /** A note `harness connect` prints after installing (a switch some versions need). */
  installNote?: string;
  /** Payload fields naming what started the session (SessionStart `source`, Gemini `trigger`). */
  triggerFields: readonly string[];
  /** Tools whose `tool_input.command` is a shell command line. */
  shellTools: readonly string[];
  /** Tools that write files, and the `tool_input` fields holding the paths they write. */
  writeTools: Readonly<Record<string, readonly string[]>>;
  /** Tools whose input is a patch naming the files it adds, updates, deletes or moves. */
  patchTools: readonly string[];
  /** How a stop is refused so the model keeps working, handed the problems as what is left to do. */
  blockStop(reason: string): HookAnswer;
}

/** The common way to block a tool: exit 2, the reason on stderr, shown to the model. */
export function blockTool(reason: string): HookAnswer {
  return { exitCode: 2, stderr: `${reason}\n` };
}
