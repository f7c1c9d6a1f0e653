import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { SCHEMA_EXAMPLES } from '../../scripts/schema-examples.js';
import { schemaFiles } from '../../scripts/schema-files.js';
import { ARTIFACT_SCHEMAS, checkerFor } from '../../src/contract/artifacts/index.js';
import { ROOT } from '../helpers/paths.js';

const root = ROOT;

t.test('committed docs/schema files equal a fresh generation (run `npm run schema`)', async (t) => {
  for (const [rel, text] of schemaFiles()) {
    const committed = await readFile(join(root, rel), 'utf8').catch(() => null);
    t.equal(committed, text, rel);
  }
});

t.test('every example validates against its schema and a broken one does not', async (t) => {
  for (const id of Object.keys(ARTIFACT_SCHEMAS)) {
    t.same(checkerFor(id).problems(SCHEMA_EXAMPLES[id]), [], id);
    const broken = { ...(SCHEMA_EXAMPLES[id] as object), schema: 'harness.unknown' };
    t.not(checkerFor(id).problems(broken).length, 0, `${id} rejects another schema id`);
  }
});
