import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { schemaFiles } from './schema-files.js';

/** `npm run schema`: writes docs/schema/ from the TypeBox artifact schemas (run from the repository root). */
const root = process.cwd();
for (const [rel, text] of schemaFiles()) {
  const path = join(root, rel);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
  process.stdout.write(`wrote ${rel}\n`);
}
