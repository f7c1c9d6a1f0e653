import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { checkTrustPin, trustStoreDigest } from '../../src/server/trust-pin.js';
import { StartupError } from '../../src/storage/lease.js';
import { loadTrustStore } from '../../src/validators/trust-store.js';
import { commitFiles, makeTestEnv, startupFailure } from '../helpers/bridge.js';

/**
 * SPEC "Review trust store path": `controls/review-trust.v1.json` in the harness repository,
 * `.harness-pack/controls/review-trust.v1.json` in a commissioned target. Startup's pin check and
 * the review gate resolve the same one file: a bridge must never start on a store the gate will not
 * read (every commissioned completion would then be blocked "not committed at HEAD").
 */
const PACK = '.harness-pack/controls/review-trust.v1.json';
const HARNESS = 'controls/review-trust.v1.json';
const store = (description: string) =>
  `${JSON.stringify({ schema: 'harness.review-trust.v1', description, keys: [] }, null, 2)}\n`;

const base = await mkdtemp(join(tmpdir(), 'hb-trust-location-'));
t.teardown(() => rm(base, { recursive: true, force: true }));
let n = 0;
async function repo(files: Record<string, string>): Promise<string> {
  const dir = join(base, `repo${n++}`);
  await mkdir(dir);
  await commitFiles(dir, files, true);
  return dir;
}

/** What startup and the gate each make of `dir` under `pin`: the path they read, or null. */
async function verdicts(dir: string, pin: string) {
  const startup = await checkTrustPin(dir, pin).catch((err: unknown) => {
    if (!(err instanceof StartupError)) throw err;
    return null;
  });
  const gate = await loadTrustStore(dir, pin);
  return { startup, gate: gate.ok ? gate.store.path : null, problems: gate.ok ? [] : gate.problems };
}

t.test('a .harness-pack folder with only controls/review-trust.v1.json: both refuse', async (t) => {
  const text = store('harness path only');
  const dir = await repo({ '.harness-pack/project-adapter.json': '{}', [HARNESS]: text });
  const v = await verdicts(dir, trustStoreDigest(text));
  t.equal(v.startup, null, 'startup refuses');
  t.equal(v.gate, null, 'the gate refuses');
  t.match(v.problems, [new RegExp(PACK.replaceAll('.', '\\.'))]);

  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const err = await startupFailure({
    env: { ...te.env, HARNESS_REPO_ROOT: dir, HARNESS_REVIEW_TRUST_SHA256: trustStoreDigest(text) },
  });
  t.ok(err instanceof StartupError, String(err));
  t.match(String(err), /HARNESS_REPO_ROOT/);
  t.match(String(err), PACK);
});

t.test('a commissioned target: both read the .harness-pack store, never the other', async (t) => {
  const pack = store('pack');
  const harness = store('harness');
  const dir = await repo({ [PACK]: pack, [HARNESS]: harness });
  t.same(await verdicts(dir, trustStoreDigest(pack)), { startup: PACK, gate: PACK, problems: [] });
  const other = await verdicts(dir, trustStoreDigest(harness));
  t.equal(other.startup, null, 'a pin of the harness-path store is refused at startup');
  t.equal(other.gate, null, 'and by the gate');
});

t.test('the harness repository (no .harness-pack): both read controls/review-trust.v1.json', async (t) => {
  const text = store('harness');
  const dir = await repo({ [HARNESS]: text });
  t.same(await verdicts(dir, trustStoreDigest(text)), { startup: HARNESS, gate: HARNESS, problems: [] });
});
