import {
  createScanner,
  getNodeValue,
  type Node,
  type ParseError,
  parseTree,
  printParseErrorCode,
} from 'jsonc-parser';
import { sameValue } from './ours.js';

/**
 * Surgical edits of a runtime's JSON (or JSONC) configuration file. jsonc-parser gives the syntax
 * tree with exact offsets and tolerates comments; the text of each insertion and removal is made
 * here, in the file's own indentation and line ends, so every byte outside our entries stays as it
 * was and a removal is the exact inverse of the insertion. (jsonc-parser's `modify` re-formats
 * whole lines around an edit, which rewrites a neighbour sharing the line.) Every edit is checked
 * against the parsed values: the file after it must hold exactly the values before it plus (or
 * minus) ours, or the edit is refused.
 */
export class ConfigFileError extends Error {
  override readonly name = 'ConfigFileError';
  constructor(
    readonly file: string,
    readonly why: string,
  ) {
    super(`${file}: ${why}`);
  }
}

/** Why an edit is refused when the file after it would not hold exactly what it held, plus or minus ours. */
export const LOSSY_EDIT = 'cannot be edited without changing other content; edit it by hand';

export type JsonPath = readonly (string | number)[];

/** One file's text, parsed; each edit returns a new JsonDoc. */
export interface JsonDoc {
  file: string;
  text: string;
  /** undefined for an empty (whitespace-only) file. */
  root: Node | undefined;
}

export function parseJson(file: string, text: string): JsonDoc {
  if (text.trim() === '') return { file, text, root: undefined };
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { disallowComments: false, allowTrailingComma: false });
  const e = errors[0];
  if (e !== undefined || root === undefined)
    throw new ConfigFileError(
      file,
      `not valid JSON (${e ? printParseErrorCode(e.error) : 'empty'} at offset ${e?.offset ?? 0})`,
    );
  if (root.type !== 'object') throw new ConfigFileError(file, 'not a JSON object');
  return { file, text, root };
}

export const docValue = (doc: JsonDoc): unknown => (doc.root === undefined ? {} : getNodeValue(doc.root));

/**
 * The node at `path`, or undefined. A key that appears twice on the way is refused: JSON.parse
 * keeps the last, this tree the first, and an edit of either would mislead whoever reads the other.
 */
export function nodeAt(doc: JsonDoc, path: JsonPath): Node | undefined {
  let node = doc.root;
  for (const [i, seg] of path.entries()) {
    if (node === undefined) return undefined;
    if (typeof seg === 'number') {
      node = node.type === 'array' ? node.children?.[seg] : undefined;
      continue;
    }
    if (node.type !== 'object') return undefined;
    const props = (node.children ?? []).filter((p) => p.children?.[0]?.value === seg);
    if (props.length > 1)
      throw new ConfigFileError(doc.file, `duplicate key ${pathText(path.slice(0, i + 1))}`);
    node = props[0]?.children?.[1];
  }
  return node;
}

export const pathText = (path: JsonPath): string => path.map(String).join('.');

/** Sets `path` to `value`: replaces the node there, or adds the missing keys to the nearest object. */
export function setAt(doc: JsonDoc, path: JsonPath, value: unknown): JsonDoc {
  let depth = path.length;
  while (depth > 0 && nodeAt(doc, path.slice(0, depth)) === undefined) depth--;
  let wrapped = value;
  for (let i = path.length - 1; i >= depth + 1; i--) wrapped = { [String(path[i])]: wrapped };
  const target = depth === 0 ? doc.root : nodeAt(doc, path.slice(0, depth));
  let text: string;
  if (target === undefined) text = `${JSON.stringify({ [String(path[0])]: wrapped }, null, 2)}\n`;
  else if (depth === path.length)
    text = splice(
      doc.text,
      target.offset,
      end(target),
      render(doc.text, wrapped, lineIndent(doc.text, target.offset)),
    );
  else if (target.type === 'object')
    text = insertInto(
      doc.text,
      target,
      (indent, colon) => `${JSON.stringify(path[depth])}${colon}${render(doc.text, wrapped, indent)}`,
    );
  else
    throw new ConfigFileError(doc.file, `${pathText(path.slice(0, depth)) || 'the file'} is not an object`);
  return checked(doc, text, (v) => assign(v, path, value));
}

/** Appends `value` to the array at `path` (made when missing). */
export function appendAt(doc: JsonDoc, path: JsonPath, value: unknown): JsonDoc {
  const target = nodeAt(doc, path);
  if (target === undefined) return setAt(doc, path, [value]);
  if (target.type !== 'array') throw new ConfigFileError(doc.file, `${pathText(path)} is not an array`);
  const text = insertInto(doc.text, target, (indent) => render(doc.text, value, indent));
  return checked(doc, text, (v) => (lookup(v, path) as unknown[]).push(value));
}

/**
 * Removes the node at `path`. When that leaves its container empty and `dropEmpty` says the
 * container is one of ours to drop (an event array, `hooks`, `mcpServers`), the container goes too.
 */
export function removeAt(doc: JsonDoc, path: JsonPath, dropEmpty: (container: JsonPath) => boolean): JsonDoc {
  const parentPath = path.slice(0, -1);
  const parent = parentPath.length === 0 ? doc.root : nodeAt(doc, parentPath);
  if (parent?.children?.length === 1 && parentPath.length > 0 && dropEmpty(parentPath))
    return removeAt(doc, parentPath, dropEmpty);
  const kids = parent?.children ?? [];
  const last = path.at(-1);
  const i = typeof last === 'number' ? last : kids.findIndex((p) => p.children?.[0]?.value === last);
  if (nodeAt(doc, path) === undefined || i < 0) return doc;
  const text = removeChild(doc.text, kids, i);
  return checked(doc, text, (v) => {
    const container = lookup(v, parentPath);
    if (Array.isArray(container)) container.splice(last as number, 1);
    else delete (container as Record<string, unknown>)[last as string];
  });
}

function checked(doc: JsonDoc, text: string, change: (value: unknown) => void): JsonDoc {
  const after = parseJson(doc.file, text);
  const expected = docValue(doc);
  change(expected);
  if (!sameValue(docValue(after), expected)) throw new ConfigFileError(doc.file, LOSSY_EDIT);
  return after;
}

function lookup(value: unknown, path: JsonPath): unknown {
  return path.reduce<unknown>((v, seg) => (v as Record<string | number, unknown>)[seg], value);
}

function assign(value: unknown, path: JsonPath, v: unknown): void {
  let at = value as Record<string | number, unknown>;
  for (const seg of path.slice(0, -1)) {
    if (at[seg] === undefined) at[seg] = Object.create(null);
    at = at[seg] as Record<string | number, unknown>;
  }
  at[path.at(-1)!] = v;
}

// Layout: the file's own line end and indentation unit, and where lines start.

const end = (n: Node) => n.offset + n.length;
const splice = (text: string, from: number, to: number, insert: string) =>
  text.slice(0, from) + insert + text.slice(to);
const eolOf = (text: string) => (text.includes('\r\n') ? '\r\n' : '\n');
const lineStart = (text: string, at: number) => text.lastIndexOf('\n', at - 1) + 1;
const lineIndent = (text: string, at: number) => /^[ \t]*/.exec(text.slice(lineStart(text, at)))![0];
const beginsLine = (text: string, at: number) => text.slice(lineStart(text, at), at).trim() === '';

function unitOf(text: string): string {
  const m = /\n([ \t]+)\S/.exec(text);
  return m === null ? '  ' : m[1]!.startsWith('\t') ? '\t' : m[1]!;
}

/** `value` as JSON text: on one line (`indent` null, or a one-line file), else indented from `indent`. */
function render(text: string, value: unknown, indent: string | null): string {
  if (indent === null || !text.trim().includes('\n')) return JSON.stringify(value);
  return JSON.stringify(value, null, unitOf(text)).replaceAll('\n', eolOf(text) + indent);
}

/**
 * Adds an entry after the container's last child, on a line of its own where the file has lines,
 * else on the container's line in its own spacing (`entry` gets null for one-line JSON).
 */
function insertInto(text: string, c: Node, entry: (indent: string | null, colon: string) => string): string {
  const eol = eolOf(text);
  const kids = c.children ?? [];
  const base = lineIndent(text, c.offset);
  const last = kids.at(-1);
  if (last === undefined) {
    if (!text.trim().includes('\n')) return splice(text, c.offset + 1, c.offset + 1, entry(null, ':'));
    const inner = text.slice(c.offset + 1, end(c) - 1);
    const line = eol + base + unitOf(text);
    const body = line + entry(base + unitOf(text), ': ');
    // An empty container's comments stay after the entry.
    return inner.trim() === ''
      ? splice(text, c.offset + 1, end(c) - 1, body + eol + base)
      : splice(text, c.offset + 1, c.offset + 1, body);
  }
  const after = end(last);
  const own = text.slice(c.offset, end(c));
  if (!own.includes('\n')) {
    // The container's own spacing; one with no separator yet is spaced if it has any space.
    const spaced = (sep: string) =>
      own.includes(`${sep} `) || (!own.includes(sep) && /\s/.test(own)) ? `${sep} ` : sep;
    return splice(text, after, after, `${spaced(',')}${entry(null, spaced('":').slice(1))}`);
  }
  const indent = beginsLine(text, last.offset) ? lineIndent(text, last.offset) : base + unitOf(text);
  const item = eol + indent + entry(indent, ': ');
  let lineEnd = text.indexOf('\n', after);
  if (lineEnd < 0) lineEnd = text.length;
  if (text[lineEnd - 1] === '\r' && lineEnd - 1 >= after) lineEnd--;
  // A line comment after the last child stays with it: the comma goes before the comment.
  if (/^[ \t]*(\/\/.*)?$/.test(text.slice(after, lineEnd)))
    return splice(splice(text, lineEnd, lineEnd, item), after, after, ',');
  return splice(text, after, after, `,${item}`);
}

/** The offset of the comma that follows `at`, past whitespace and comments. */
function commaAfter(text: string, at: number): number {
  const scanner = createScanner(text, true);
  scanner.setPosition(at);
  scanner.scan();
  return scanner.getTokenOffset();
}

/** Removes child `i`: the inverse of insertInto for the last child, and its line for any other. */
function removeChild(text: string, kids: Node[], i: number): string {
  const k = kids[i]!;
  const start = lineStart(text, k.offset);
  const ownLine = beginsLine(text, k.offset) && start > 0;
  // From the end of the line before, when the child begins its line.
  const from = ownLine ? start - (text[start - 2] === '\r' ? 2 : 1) : k.offset;
  if (kids.length === 1) return splice(text, from, end(k), '');
  const prev = kids[i - 1];
  if (prev !== undefined && i === kids.length - 1) {
    const comma = commaAfter(text, end(prev));
    if (ownLine && from > comma) return splice(splice(text, from, end(k), ''), comma, comma + 1, '');
    return splice(text, comma, end(k), '');
  }
  const next = kids[i + 1]!;
  const between = text.slice(end(k), next.offset);
  if (/^\s*,\s*$/.test(between)) return splice(text, k.offset, next.offset, '');
  return splice(text, k.offset, commaAfter(text, end(k)) + 1, '');
}
