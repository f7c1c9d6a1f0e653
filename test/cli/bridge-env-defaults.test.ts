import { availableParallelism, homedir } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import t from 'tap';
import { readBridgeEnv } from '../../src/server/env.js';

/**
 * CONTRACT 2's defaults, read with only what has none set (the three credentials and the trust
 * pin): every test elsewhere sets these variables, so this is where a changed default shows.
 */
const bare = {
  HARNESS_BRIDGE_INTEGRITY_KEY: 'k'.repeat(32),
  HARNESS_BRIDGE_ACCESS_TOKEN: 'a'.repeat(32),
  HARNESS_HUMAN_APPROVAL_TOKEN: 'h'.repeat(32),
  HARNESS_REVIEW_TRUST_SHA256: 'ab'.repeat(32),
};

t.test('the defaults of CONTRACT 2', async (t) => {
  const env = readBridgeEnv(bare);
  const cores = availableParallelism();
  t.match(env, {
    host: '127.0.0.1',
    port: 8787,
    dataDir: resolve(homedir(), '.harness', 'runs'),
    repoRoot: process.cwd(),
    adapterRoots: [],
    workers: Math.min(4, cores),
    validatorConcurrency: cores,
    maxEventsPerRun: 100_000,
  });
  // An empty value is the default too, as an unset one is.
  t.equal(readBridgeEnv({ ...bare, HARNESS_BRIDGE_PORT: '', HARNESS_BRIDGE_HOST: '' }).port, 8787);
});

t.test('an IPv6 loopback written as in a URL is the address itself', async (t) => {
  // listen() takes ::1, not [::1]: the brackets would otherwise surface as a bind failure blamed
  // on HARNESS_BRIDGE_PORT.
  t.equal(readBridgeEnv({ ...bare, HARNESS_BRIDGE_HOST: '[::1]' }).host, '::1');
  t.equal(readBridgeEnv({ ...bare, HARNESS_BRIDGE_HOST: '::1' }).host, '::1');
  t.throws(() => readBridgeEnv({ ...bare, HARNESS_BRIDGE_HOST: '[::]' }), /HARNESS_BRIDGE_HOST/);
});

t.test('a relative data directory or repository root is resolved once, at startup', async (t) => {
  // Later reads (the lease, the store, git run in another directory) must not depend on the cwd.
  const env = readBridgeEnv({ ...bare, HARNESS_DATA_DIR: 'rel-data', HARNESS_REPO_ROOT: 'rel-repo' });
  t.equal(env.dataDir, resolve('rel-data'));
  t.equal(env.repoRoot, resolve('rel-repo'));
  t.ok(isAbsolute(env.dataDir) && isAbsolute(env.repoRoot));
});
