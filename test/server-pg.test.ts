// Runs every test file in test/server/ again, against the PostgreSQL store (issue 32: one suite,
// both stores): a throwaway cluster, a fresh schema per test environment (test/helpers/pg-store.ts).
import { clusterOrSkip } from './helpers/pg-store.js';
import { runGroup } from './helpers/test-group.js';

const cluster = await clusterOrSkip('test/server/ against PostgreSQL');
if (cluster !== null) {
  process.env['HARNESS_TEST_DATABASE_URL'] = cluster.url;
  runGroup(import.meta.filename, 'server');
}
