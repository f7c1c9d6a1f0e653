import { COMMIT_NAMES_MAX, NAMED_PATHS_MAX } from '../contract/limits.js';
import { isCommitName } from '../validators/commit-name.js';

/** What a document names: the artifact paths of its references and its commit names. */
export interface DocumentRefs {
  /**
   * Every distinct `{path, sha256}` reference path, sorted by code unit, or null when there are
   * more than NAMED_PATHS_MAX (the caller's verdict needs no more than that fact).
   */
  paths: string[] | null;
  /** The commit names (sorted), at most COMMIT_NAMES_MAX + 1: one more already means too many. */
  commits: string[];
}

/**
 * The references of a JSON text (the artifact paths of every `{path, sha256}` object and the
 * commit names among its string values), read in one pass over the text without building its
 * value: a document naming hundreds of thousands of paths costs its text, the paths and a stack
 * as deep as its nesting, never one object per node. It accepts exactly the texts JSON.parse
 * accepts and names nothing for any other. Within one object a repeated member name takes the
 * last value, as JSON.parse does, for `path` and `sha256`; references and commit names inside an
 * earlier value of a repeated member are kept (JSON.parse drops that value): the bytes name them,
 * so they are checked too.
 */
export function refsOfText(text: string, maxPaths = NAMED_PATHS_MAX): DocumentRefs | null {
  const paths = new Set<string>();
  const commits = new Set<string>();
  // Per open container: null for an array; for an object, what its `path` and `sha256` members
  // hold (a string, or false for any other value) and the member name being read.
  interface Frame {
    path: string | false | undefined;
    sha256: boolean | undefined;
    key: string | null;
  }
  const stack: (Frame | null)[] = [];
  const n = text.length;
  let i = 0;
  const ws = () => {
    for (let c = text.charCodeAt(i); c === 32 || c === 9 || c === 10 || c === 13; c = text.charCodeAt(++i));
  };
  const fail = (): never => {
    throw new SyntaxError('not JSON');
  };
  const string = (): string => {
    // i is at the opening quote.
    let out = '';
    let start = ++i;
    for (;;) {
      if (i >= n) fail();
      const c = text.charCodeAt(i);
      if (c === 34) {
        out += text.slice(start, i++);
        return out;
      }
      if (c < 32) fail();
      if (c !== 92) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      const e = text[i + 1];
      i += 2;
      if (e === 'u') {
        const hex = text.slice(i, i + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail();
        out += String.fromCharCode(Number.parseInt(hex, 16));
        i += 4;
      } else {
        if (e === undefined || !Object.hasOwn(ESCAPES, e)) fail();
        out += ESCAPES[e as string];
      }
      start = i;
    }
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  const LITERAL = /true|false|null/y;
  /** Reads one value that is not a container; true when it was a string, with `last` set. */
  let last = '';
  const scalar = (): boolean => {
    const c = text[i];
    if (c === '"') {
      last = string();
      return true;
    }
    const re = c === 't' || c === 'f' || c === 'n' ? LITERAL : NUMBER;
    re.lastIndex = i;
    const m = re.exec(text);
    if (!m || m[0] === '') fail();
    i = re.lastIndex;
    return false;
  };
  /** A value was read inside the innermost container (string: its text in `last`). */
  const member = (isString: boolean) => {
    if (isString && isCommitName(last)) commits.add(last);
    const top = stack.at(-1);
    if (!top) return;
    if (top.key === 'path') top.path = isString ? last : false;
    else if (top.key === 'sha256') top.sha256 = isString;
  };
  const close = () => {
    const top = stack.pop();
    if (top && typeof top.path === 'string' && top.sha256 === true) paths.add(top.path);
    member(false);
  };
  try {
    ws();
    for (;;) {
      // Expecting a value.
      const c = text[i];
      if (c === '{' || c === '[') {
        i++;
        ws();
        const empty = text[i] === (c === '{' ? '}' : ']');
        stack.push(c === '{' ? { path: undefined, sha256: undefined, key: null } : null);
        if (empty) {
          i++;
          close();
        } else if (c === '{') {
          if (text[i] !== '"') fail();
          (stack.at(-1) as Frame).key = string();
          ws();
          if (text[i++] !== ':') fail();
          ws();
          continue;
        } else continue;
      } else if (c === undefined) {
        fail();
      } else {
        member(scalar());
      }
      // After a value: a separator, a close, or the end.
      for (;;) {
        ws();
        if (stack.length === 0) {
          if (i !== n) fail();
          const all = [...paths].sort();
          return {
            paths: all.length > maxPaths ? null : all,
            commits: [...commits].sort().slice(0, COMMIT_NAMES_MAX + 1),
          };
        }
        const top = stack.at(-1) as Frame | null;
        const d = text[i++];
        if (d === ',') {
          ws();
          if (top) {
            if (text[i] !== '"') fail();
            top.key = string();
            ws();
            if (text[i++] !== ':') fail();
            ws();
          }
          break;
        }
        if (d !== (top ? '}' : ']')) fail();
        close();
      }
    }
  } catch (err) {
    if (err instanceof SyntaxError) return null;
    throw err;
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};
