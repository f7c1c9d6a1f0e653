import { parse } from 'smol-toml';
import { ConfigFileError, LOSSY_EDIT } from './json-edit.js';
import {
  type EntryState,
  FOREIGN_MCP,
  isObject,
  type Launcher,
  mcpServer,
  mcpServerState,
  sameValue,
} from './ours.js';

/**
 * Our `[mcp_servers.harness]` table in Codex's `~/.codex/config.toml`. The user's TOML is never
 * re-serialised: the table is appended as text at the end, and removed or replaced as the lines
 * it spans. smol-toml parses the file before and after each edit, and the edit stands only when
 * the values after are exactly the values before with our table added, changed or gone.
 */
export interface TomlDoc {
  file: string;
  text: string;
  value: Record<string, unknown>;
}

export function parseToml(file: string, text: string): TomlDoc {
  try {
    return { file, text, value: parse(text) as Record<string, unknown> };
  } catch (err) {
    const first = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new ConfigFileError(file, `not valid TOML (${first})`);
  }
}

function servers(doc: TomlDoc): Record<string, unknown> | undefined {
  const s = doc.value['mcp_servers'];
  if (s !== undefined && !isObject(s)) throw new ConfigFileError(doc.file, '`mcp_servers` is not a table');
  return s;
}

export function tomlMcpState(doc: TomlDoc, launcher: Launcher): EntryState {
  return mcpServerState(servers(doc)?.['harness'], launcher);
}

export function installTomlMcp(doc: TomlDoc, launcher: Launcher): TomlDoc {
  const state = tomlMcpState(doc, launcher);
  if (state === 'current') return doc;
  if (state === 'foreign') throw new ConfigFileError(doc.file, FOREIGN_MCP);
  const eol = doc.text.includes('\r\n') ? '\r\n' : '\n';
  const server = mcpServer(launcher);
  const block = [
    '[mcp_servers.harness]',
    `command = ${tomlString(server.command)}`,
    `args = [${server.args.map(tomlString).join(', ')}]`,
  ];
  let text: string;
  if (state === 'stale') {
    const lines = doc.text.split('\n');
    const [start, end] = ourLines(doc, lines);
    text = [...lines.slice(0, start), ...block.map((l) => l + eol.slice(0, -1)), ...lines.slice(end)].join(
      '\n',
    );
  } else {
    const gap = doc.text === '' ? '' : doc.text.endsWith('\n') ? eol : eol + eol;
    text = doc.text + gap + block.join(eol) + eol;
  }
  return checked(doc, text, (s) => {
    s['harness'] = server;
  });
}

export function removeTomlMcp(doc: TomlDoc, launcher: Launcher): TomlDoc {
  const state = tomlMcpState(doc, launcher);
  if (state !== 'current' && state !== 'stale') return doc;
  const lines = doc.text.split('\n');
  let [start, end] = ourLines(doc, lines);
  // At the end of the file, the blank line installing put before the table goes with it.
  const atEnd = lines.slice(end).every((l) => l.trim() === '');
  if (atEnd && start > 0 && lines[start - 1]!.trim() === '') start--;
  const text = [...lines.slice(0, start), ...lines.slice(end)].join('\n');
  return checked(doc, text, (s) => {
    delete s['harness'];
  });
}

const OUR_HEADER =
  /^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*(?:harness|"harness"|'harness')[ \t]*\][ \t]*(?:#.*)?\r?$/;

/**
 * The lines of our table: its header to the next header, less the blank and comment lines that
 * end it (they belong to what follows).
 */
function ourLines(doc: TomlDoc, lines: string[]): [number, number] {
  const start = lines.findIndex((l) => OUR_HEADER.test(l));
  if (start < 0)
    throw new ConfigFileError(
      doc.file,
      '`mcp_servers.harness` is not written as a [mcp_servers.harness] table: edit it by hand',
    );
  let end = start + 1;
  while (end < lines.length && !/^[ \t]*\[/.test(lines[end]!)) end++;
  while (end > start + 1 && /^[ \t]*(#.*)?\r?$/.test(lines[end - 1]!)) end--;
  return [start, end];
}

/** A TOML basic string. JSON's escapes are TOML's, but for DEL, which TOML requires escaped. */
function tomlString(s: string): string {
  return JSON.stringify(s).replaceAll('\u007f', '\\u007F');
}

function checked(doc: TomlDoc, text: string, change: (servers: Record<string, unknown>) => void): TomlDoc {
  const unchanged = () => new ConfigFileError(doc.file, LOSSY_EDIT);
  let after: TomlDoc;
  try {
    after = parseToml(doc.file, text);
  } catch {
    // The text appended cannot stand where it is (`mcp_servers` is an inline table, say).
    throw unchanged();
  }
  const expected = parseToml(doc.file, doc.text).value;
  const s = (expected['mcp_servers'] ?? Object.create(null)) as Record<string, unknown>;
  change(s);
  expected['mcp_servers'] = s;
  const withoutEmpty = (v: Record<string, unknown>) => {
    const { mcp_servers, ...rest } = v;
    return isObject(mcp_servers) && Object.keys(mcp_servers).length === 0 ? rest : v;
  };
  if (!sameValue(withoutEmpty(after.value), withoutEmpty(expected))) throw unchanged();
  return after;
}
