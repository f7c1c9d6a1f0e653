// Copies the PostgreSQL store's migrations (src/storage/pg/migrations/*.sql) beside the compiled
// module that reads them at startup (dist/src/storage/pg/migrations.js): tsc copies no .sql file.
// `npm run build` and `npm run compile:test` run it after tsc; the copy replaces the directory, so
// a migration removed from src is gone from dist too.
import { cpSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const from = `${root}src/storage/pg/migrations`;
const to = `${root}dist/src/storage/pg/migrations`;
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true, filter: (src) => src === from || src.endsWith('.sql') });
