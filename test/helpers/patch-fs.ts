import fs from 'node:fs';
import { type FileHandle, open, rm } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';

type Fn = (...args: unknown[]) => unknown;

/**
 * Replaces functions of `node:fs` for the rest of test `t`: each entry builds the replacement
 * from the original, and code that imported the function by name sees it too
 * (syncBuiltinESMExports). The originals come back at teardown.
 */
export function patchFs(t: Test, patches: Partial<Record<keyof typeof fs, (original: Fn) => Fn>>): void {
  const target = fs as unknown as Record<string, Fn>;
  const originals: Record<string, Fn> = {};
  for (const [name, make] of Object.entries(patches)) {
    originals[name] = target[name]!;
    target[name] = make!(target[name]!);
  }
  syncBuiltinESMExports();
  t.teardown(() => {
    Object.assign(target, originals);
    syncBuiltinESMExports();
  });
}

/** The path a descriptor of this process names now (Linux). */
export const pathOfFd = (fd: number): string => fs.readlinkSync(`/proc/self/fd/${fd}`);

/**
 * Records, in order, each datasync (FileHandle or descriptor, as the commit path makes them) and
 * FileHandle sync (by the file or directory it syncs) and truncate, from every caller in this
 * process: the bridge below runs in-process.
 */
export async function recordHandleSyncs(t: Test): Promise<string[]> {
  const seen: string[] = [];
  const probe = await open(join(tmpdir(), `harness-probe-${process.pid}`), 'w');
  const proto = Object.getPrototypeOf(probe) as FileHandle;
  await probe.close();
  await rm(join(tmpdir(), `harness-probe-${process.pid}`));
  const { datasync, sync, truncate } = proto;
  const path = (h: FileHandle) => pathOfFd(h.fd);
  proto.datasync = function (this: FileHandle) {
    seen.push(`datasync ${path(this)}`);
    return datasync.call(this);
  };
  proto.sync = function (this: FileHandle) {
    seen.push(`sync ${path(this)}`);
    return sync.call(this);
  };
  proto.truncate = function (this: FileHandle, len?: number) {
    seen.push(`truncate ${path(this)}`);
    return truncate.call(this, len);
  };
  patchFs(t, {
    fdatasync:
      (original) =>
      (fd, ...rest) => {
        seen.push(`datasync ${pathOfFd(fd as number)}`);
        return original(fd, ...rest);
      },
  });
  t.teardown(() => {
    proto.datasync = datasync;
    proto.sync = sync;
    proto.truncate = truncate;
  });
  return seen;
}
