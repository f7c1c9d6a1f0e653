import { CreateRunSchema, RunEventSchema } from '../contract/index.js';
import { buildApp } from './app.js';
import type { BridgeContext } from './context.js';

/**
 * Documents generated from the code: the OpenAPI document of the routes (their TypeBox schemas)
 * and the published JSON Schemas of the two request bodies. test/build/generated-docs.test.ts proves the
 * committed copies in docs/ match.
 */
export async function openApiDocument(): Promise<unknown> {
  // Route registration reads nothing from the context; handlers never run while documenting.
  const env = {
    accessToken: 'documentation-only',
    humanToken: 'documentation-only',
    integrityKey: Buffer.from('documentation-only'),
    // The export route is registered only where a key is held: documented as such a bridge's.
    exportKey: { text: 'documentation-only' },
  };
  const ctx = { port: () => 0, env } as unknown as BridgeContext;
  const app = await buildApp(ctx);
  await app.ready();
  const doc = app.swagger();
  await app.close();
  return doc;
}

export function publishedSchemas(): Record<string, unknown> {
  const withMeta = (id: string, schema: object) => ({
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    ...JSON.parse(JSON.stringify(schema)),
    $id: id,
  });
  return {
    'run-event.schema.json': withMeta('harness.connector-events.v0.5/run-event', RunEventSchema),
    'create-run.schema.json': withMeta('harness.connector-events.v0.5/create-run', CreateRunSchema),
  };
}

export function stableJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
