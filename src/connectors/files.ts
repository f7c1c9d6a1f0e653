import { chmod, mkdir, open, readFile, realpath, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { atomicWrite } from '../storage/atomic.js';
import { ConfigFileError } from './json-edit.js';

/** One configuration file `harness connect` may write: its text now (null: absent) and after. */
export interface FilePlan {
  path: string;
  /** Under the home folder: a new file is 0600 in 0700 folders. A project's files are shared: 0644. */
  private: boolean;
  before: string | null;
  after: string;
}

/** A file's text, or null when there is none. Text that is not UTF-8 could not be written back as it was. */
export async function readConfig(path: string): Promise<string | null> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ConfigFileError(path, `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes)) throw new ConfigFileError(path, 'not UTF-8 text');
  return text;
}

/**
 * Writes one planned file, if it changes: a backup of the old bytes first (with their mode), then
 * the new text atomically with the file's mode kept. A link (a dotfiles checkout) is written
 * through, not replaced. Answers the backup's path, or null when nothing needed one.
 */
export async function writePlan(plan: FilePlan, now: Date): Promise<string | null> {
  if (plan.after === (plan.before ?? '')) return null;
  const target = await realpath(plan.path).catch(() => plan.path);
  if (plan.before === null) {
    await mkdir(dirname(target), { recursive: true, mode: plan.private ? 0o700 : 0o755 });
    await atomicWrite(target, plan.after, plan.private ? 0o600 : 0o644);
    return null;
  }
  const mode = (await stat(target)).mode & 0o7777;
  // The file is read again: what another program wrote since the plan must not be lost.
  if ((await readConfig(target)) !== plan.before)
    throw new ConfigFileError(plan.path, 'changed while harness connect ran: run it again');
  const backup = await writeBackup(plan.path, plan.before, mode, now);
  await atomicWrite(target, plan.after, mode);
  // atomicWrite's mode is narrowed by the umask; the file keeps exactly the mode it had.
  await chmod(target, mode);
  return backup;
}

async function writeBackup(path: string, text: string, mode: number, now: Date): Promise<string> {
  const stamp = now.toISOString().replace(/[-:]/g, '');
  for (let n = 0; ; n++) {
    const backup = `${path}.harness-backup-${stamp}${n === 0 ? '' : `-${n}`}`;
    try {
      const handle = await open(backup, 'wx', mode & 0o777);
      try {
        await handle.chmod(mode);
        await handle.writeFile(text);
        await handle.sync();
      } finally {
        await handle.close();
      }
      return backup;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}
