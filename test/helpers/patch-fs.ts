import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
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
