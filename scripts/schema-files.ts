import { ARTIFACT_SCHEMAS } from '../src/contract/artifacts/index.js';
import { SCHEMA_EXAMPLES } from './schema-examples.js';

/**
 * The published artifact schemas, rendered from the TypeBox sources (the single source of truth):
 * docs/schema/<id>.schema.json and docs/schema/examples/<id>.example.json. A test regenerates this
 * map and compares it with the committed files.
 */
export function schemaFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [id, schema] of Object.entries(ARTIFACT_SCHEMAS)) {
    const doc = { $schema: 'https://json-schema.org/draft/2020-12/schema', ...schema };
    files.set(`docs/schema/${id}.schema.json`, `${JSON.stringify(doc, null, 2)}\n`);
    const example = SCHEMA_EXAMPLES[id];
    if (example === undefined) throw new Error(`no example for ${id}`);
    files.set(`docs/schema/examples/${id}.example.json`, `${JSON.stringify(example, null, 2)}\n`);
  }
  return files;
}
