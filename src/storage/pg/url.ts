import { parse } from 'pg-connection-string';
import { StartupError } from '../lease.js';

/** The variable that selects the PostgreSQL run store; its value may hold a password. */
export const DATABASE_URL_NAME = 'HARNESS_DATABASE_URL';

const SCHEME = /^postgres(?:ql)?:\/\//i;
const WITHHELD = '***';
/** What a message shows in place of a URL that does not parse: its text may be all password. */
const UNPARSED = '(a URL that does not parse)';
/** A query parameter node-postgres reads a password from (`password=`, `sslpassword=`). */
const PASSWORD_PARAMETER = /([?&][^=&#]*password[^=&#]*=)[^&#]*/gi;

/**
 * node-postgres's own reading of the URL (pg-connection-string, what the pool connects with), or
 * null when it does not parse. The ssl parameters are renamed first: their values are files it
 * would read and modes it would warn about, none of which says where the password is.
 */
function parsed(text: string): ReturnType<typeof parse> | null {
  try {
    return parse(text.replace(/([?&])(sslcert|sslkey|sslrootcert|sslmode)=/gi, '$1_$2='));
  } catch {
    return null;
  }
}

/**
 * HARNESS_DATABASE_URL checked: null when absent or empty (the file store), else a `postgres://`
 * or `postgresql://` URL as given (a Unix-socket directory goes in `?host=/dir`). The refusal never
 * quotes the value: a URL that does not parse may be a password pasted in the wrong place.
 */
export function parseDatabaseUrl(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  if (!SCHEME.test(raw)) {
    throw new StartupError(`${DATABASE_URL_NAME} must be a postgres:// or postgresql:// URL`);
  }
  if (parsed(raw) === null) {
    throw new StartupError(
      `${DATABASE_URL_NAME} must be a postgres:// or postgresql:// URL; it does not parse`,
    );
  }
  return raw;
}

/**
 * The password of the user part (`postgres://user:PASSWORD@host`) as written: the authority ends
 * at the first `/`, `?` or `#` after the scheme, and its last `@` ends the user part.
 */
function userPassword(text: string): { start: number; end: number } | null {
  const from = text.indexOf('//') + 2;
  const stop = text.slice(from).search(/[/?#]/);
  const authority = stop < 0 ? text.slice(from) : text.slice(from, from + stop);
  const at = authority.lastIndexOf('@');
  const colon = authority.indexOf(':');
  if (at < 0 || colon < 0 || colon > at) return null;
  return { start: from + colon + 1, end: from + at };
}

/**
 * A database URL fit for a message or a log line: the password (in the user part or a query
 * parameter) replaced by `***`. A URL that does not parse, or one whose password this would not
 * find where node-postgres finds it, is not shown at all.
 */
export function redactDatabaseUrl(text: string): string {
  const config = parsed(text);
  if (config === null || !SCHEME.test(text)) return UNPARSED;
  const pw = userPassword(text);
  let out = pw === null ? text : `${text.slice(0, pw.start)}${WITHHELD}${text.slice(pw.end)}`;
  out = out.replace(PASSWORD_PARAMETER, `$1${WITHHELD}`);
  // node-postgres must read the shown text's password as the marker (or none): else the text
  // was not split where it splits it, and part of the password could still be there.
  const left = parsed(out)?.password ?? '';
  return left === '' || left === WITHHELD ? out : UNPARSED;
}

/**
 * The strings a message or the bridge's log is scrubbed of for this URL (logging.ts
 * `loggerOptions`, like the credentials): the URL itself and its password as node-postgres reads
 * it, as written in the URL and percent-encoded. Empty for no URL.
 */
/** Whether the URL carries a password: in its user part or in a password parameter. */
export function carriesPassword(text: string): boolean {
  return databaseUrlSecrets(text).some((secret) => secret !== text);
}

export function databaseUrlSecrets(text: string | null): string[] {
  if (text === null || text === '') return [];
  const secrets = [text];
  const pw = userPassword(text);
  if (pw !== null) secrets.push(text.slice(pw.start, pw.end));
  for (const m of text.matchAll(PASSWORD_PARAMETER)) secrets.push(m[0].slice(m[1]!.length));
  const password = parsed(text)?.password;
  if (password) secrets.push(password, encodeURIComponent(password));
  return [...new Set(secrets.filter((s) => s !== ''))];
}
