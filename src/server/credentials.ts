import { closeSync, constants, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { CREDENTIAL_MIN_BYTES } from '../contract/index.js';
import { StartupError } from '../storage/lease.js';
import { CREDENTIAL_NAMES } from '../validators/child-environment.js';

/**
 * Where the bridge takes its three credentials from. Threat: a process of the bridge's user (or
 * root) reads `/proc/<pid>/environ`, which keeps the environment the process was started with for
 * its whole life; deleting a variable later changes nothing there. A credential given as a file,
 * `<NAME>_FILE` or systemd's `$CREDENTIALS_DIRECTORY/<NAME>` (`LoadCredential=<NAME>:<path>`), is
 * read into memory and never enters the environment block, so a bridge started from files holds
 * none of them there. Each credential comes from exactly one place: a set-up that gives one twice
 * is refused rather than having one silently win.
 */

/** Far above any credential: a larger file is a wrong path, not a key. */
const FILE_MAX_BYTES = 64 * 1024;

interface Source {
  /** How the refusal names it. */
  label: string;
  read: () => string;
}

/**
 * A credential file's text, less one final newline (`echo` and most editors end a file with one).
 * `privateFile`: refused when its group or others may read it (a `_FILE` the operator made);
 * systemd's credential files are the service's own and are not judged by their mode.
 */
function readCredentialFile(label: string, path: string, privateFile: boolean): string {
  let fd: number;
  try {
    // Non-blocking: a FIFO put in the file's place is refused below instead of hanging startup.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw new StartupError(
      `${label} ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new StartupError(`${label} ${path} is not a regular file`);
    if (privateFile && (st.mode & 0o044) !== 0)
      throw new StartupError(`${label} ${path} is readable by its group or others (chmod 600 it)`);
    if (st.size > FILE_MAX_BYTES)
      throw new StartupError(`${label} ${path} is larger than ${FILE_MAX_BYTES} bytes`);
    const buf = Buffer.alloc(st.size);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const text = buf.subarray(0, n).toString('utf8');
    return text.endsWith('\r\n') ? text.slice(0, -2) : text.endsWith('\n') ? text.slice(0, -1) : text;
  } finally {
    closeSync(fd);
  }
}

function sourcesOf(env: NodeJS.ProcessEnv, name: string): Source[] {
  const sources: Source[] = [];
  const value = env[name];
  if (value !== undefined && value !== '') sources.push({ label: name, read: () => value });
  const file = env[`${name}_FILE`];
  if (file !== undefined && file !== '')
    sources.push({ label: `${name}_FILE`, read: () => readCredentialFile(`${name}_FILE`, file, true) });
  const dir = env['CREDENTIALS_DIRECTORY'];
  if (dir !== undefined && dir !== '') {
    // systemd's directory holds the credentials the unit loads, by ID: one present is a source.
    const path = join(dir, name);
    const label = `CREDENTIALS_DIRECTORY/${name}`;
    if (existsSync(path)) sources.push({ label, read: () => readCredentialFile(label, path, false) });
  }
  return sources;
}

/**
 * An optional credential (the export key, EXPORT_KEY_NAME): from its one source as the three are,
 * or null when none gives it.
 */
export function readOptionalCredential(env: NodeJS.ProcessEnv, name: string): string | null {
  const v = oneSource(env, name)?.read() ?? '';
  return v === '' ? null : v;
}

/** The one source of `name`, if any: a set-up that gives it twice is refused. */
function oneSource(env: NodeJS.ProcessEnv, name: string): Source | undefined {
  const sources = sourcesOf(env, name);
  if (sources.length > 1)
    throw new StartupError(
      `${name} is given more than once (${sources.map((s) => s.label).join(', ')}); give it one way only`,
    );
  return sources[0];
}

/**
 * The three credentials, each from its one source, at least 32 bytes of UTF-8 and pairwise
 * distinct (CONTRACT 2); the first fault stops startup with one line naming the variable.
 */
export function readCredentials(env: NodeJS.ProcessEnv): [string, string, string] {
  const values = CREDENTIAL_NAMES.map((name) => {
    const source = oneSource(env, name);
    const v = source?.read() ?? '';
    if (v === '')
      throw new StartupError(
        source === undefined
          ? `${name} is missing (set it, ${name}_FILE, or a credential of that name in CREDENTIALS_DIRECTORY)`
          : `${name} is missing: ${source.label} is empty`,
      );
    if (Buffer.byteLength(v, 'utf8') < CREDENTIAL_MIN_BYTES) {
      throw new StartupError(`${name} must be at least ${CREDENTIAL_MIN_BYTES} bytes`);
    }
    return v;
  }) as [string, string, string];
  for (let i = 0; i < 3; i++) {
    for (let j = i + 1; j < 3; j++) {
      if (values[i] === values[j]) {
        throw new StartupError(`${CREDENTIAL_NAMES[i]} and ${CREDENTIAL_NAMES[j]} must be pairwise distinct`);
      }
    }
  }
  return values;
}
