import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, extname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const ext = extname(fileURLToPath(import.meta.url));
let memo: Promise<string> | null = null;

/**
 * The directories of the code that judges the finish line, each with the file extension it is
 * loaded as: the validators, the contract and its artifact schemas, the hash and document workers
 * (as loaded: .js from dist, .ts under a loader), the TypeBox bundle that compiles and checks
 * every schema, and the secretlint bundle whose rules the secret scan applies (always built
 * JavaScript, wherever `#typebox` and `#secretlint` resolve).
 */
export function judgingCode(): { dir: string; ext: string }[] {
  const ours = ['../validators', '../contract', '../contract/artifacts', '../workers'];
  return [
    ...ours.map((d) => ({ dir: join(here, d), ext })),
    { dir: dirname(fileURLToPath(import.meta.resolve('#typebox'))), ext: '.js' },
    { dir: dirname(fileURLToPath(import.meta.resolve('#secretlint'))), ext: '.js' },
  ];
}

/**
 * The identity of the code that judges the finish line: SHA-256 over the files of judgingCode()
 * and the Node version. A completed run seals it; a later read under different code is runtime
 * drift.
 */
export function validatorCodeDigest(): Promise<string> {
  memo ??= (async () => {
    const hash = createHash('sha256').update(`node ${process.version}\0`);
    for (const { dir, ext } of judgingCode()) {
      const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => extname(n) === ext).sort();
      for (const name of names) {
        hash
          .update(`${relative(here, dir)}/${name}\0`)
          .update(await readFile(join(dir, name)))
          .update('\0');
      }
    }
    return hash.digest('hex');
  })();
  return memo;
}
