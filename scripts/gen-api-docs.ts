import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openApiDocument, publishedSchemas, stableJson } from '../src/server/openapi.js';

/** Regenerates docs/openapi.json and docs/schema/{run-event,create-run}.schema.json from the code. */
const root = process.argv[2] ?? process.cwd();
await mkdir(join(root, 'docs', 'schema'), { recursive: true });
await writeFile(join(root, 'docs', 'openapi.json'), stableJson(await openApiDocument()));
for (const [name, schema] of Object.entries(publishedSchemas())) {
  await writeFile(join(root, 'docs', 'schema', name), stableJson(schema));
}
process.stdout.write('wrote docs/openapi.json and docs/schema/{run-event,create-run}.schema.json\n');
