import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type JsonLinesChild, startJsonLinesChild } from './json-lines-child.js';

/** `harness watch` as a child, as a user runs it: its stdout records, stderr, and how it ended. */
export interface Watcher extends Omit<JsonLinesChild, 'until'> {
  /** Resolves once `count` posted records (those with a seq) were printed; rejects after `ms`. */
  posted: (count: number, ms?: number) => Promise<Record<string, any>[]>;
}

/** Starts `harness watch runId --root root` and waits for its ready line (`watching`). */
export async function startWatcher(
  t: { teardown(fn: () => unknown): void },
  env: Record<string, string>,
  runId: string,
  root: string,
  extra: string[] = ['--settle-ms', '60'],
): Promise<Watcher> {
  const { until, ...w } = await startJsonLinesChild(
    t,
    ['watch', runId, '--root', root, ...extra],
    env,
    (r) => 'watching' in r,
  );
  const postedRecords = () => w.records.filter((r) => typeof r['seq'] === 'number');
  return {
    ...w,
    posted: async (count, ms = 10_000) => {
      await until(() => postedRecords().length >= count, ms, `${count} posted record(s)`);
      return postedRecords();
    },
  };
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Writes `text` at `root/rel`, making its directories. */
export async function put(root: string, rel: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, rel)), { recursive: true });
  await writeFile(join(root, rel), text);
}

/** As an editor saves: the bytes to a temporary file beside it, then renamed over it. */
export async function saveByRename(root: string, rel: string, text: string): Promise<void> {
  const tmp = join(root, `${rel}.swp`);
  await mkdir(dirname(tmp), { recursive: true });
  await writeFile(tmp, text);
  await rename(tmp, join(root, rel));
}

export const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
