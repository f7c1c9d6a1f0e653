import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const ext = extname(fileURLToPath(import.meta.url));
let memo: Promise<string> | null = null;

/**
 * The identity of the code that judges the finish line: SHA-256 over the validators' and the
 * contract's own files (as loaded: .js from dist, .ts under a loader) and the Node version. A
 * completed run seals it; a later read under different validator code is runtime drift.
 */
export function validatorCodeDigest(): Promise<string> {
  memo ??= (async () => {
    const hash = createHash('sha256').update(`node ${process.version}\0`);
    for (const dir of ['../validators', '../contract', '../contract/artifacts']) {
      const abs = join(here, dir);
      const names = (await readdir(abs).catch(() => [] as string[])).filter((n) => extname(n) === ext).sort();
      for (const name of names) {
        hash
          .update(`${dir}/${name}\0`)
          .update(await readFile(join(abs, name)))
          .update('\0');
      }
    }
    return hash.digest('hex');
  })();
  return memo;
}
