import { generateKeyPairSync } from 'node:crypto';
import { link, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { runFinishLine } from '../../src/validators/finish-line.js';
import { buildInventory } from '../../src/validators/inventory.js';
import { createFinishLineGate } from '../../src/validators/runner.js';
import { signEd25519, type VerifyResult } from '../../src/validators/signature.js';
import { HashPool } from '../../src/workers/pool.js';
import run, { decodedJsonLeak } from '../../src/workers/tasks.js';
import { buildFixture } from '../helpers/finish-line-fixture.js';

/**
 * The validator child's worker pool: Ed25519 verification and batched inventory hashing. The
 * worker entry is called directly (tap's coverage does not see worker threads) and through a real
 * HashPool, and the finish-line rules are run with the pool in place of the inline paths.
 */
const keys = generateKeyPairSync('ed25519');
const privateKeyPem = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const publicKeyPem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const payload = Buffer.from('harness.review.v2.signature\n{"runId":"r1"}');
const signatureBase64 = signEd25519(payload, privateKeyPem);
const tampered = Buffer.from(payload);
tampered[0] = tampered[0]! ^ 1;
// One pool for the file: a worker thread starting under the TypeScript loader takes seconds.
const pool = new HashPool(2);
t.teardown(() => pool.close());

t.test('the worker entry verifies Ed25519 and reports a bad signature or key as a result', async (t) => {
  const verify = (over: object) =>
    run({
      op: 'verify-ed25519',
      verify: { payload, signatureBase64, publicKeyPem, ...over },
    }) as VerifyResult;
  t.same(verify({}), { ok: true });
  t.same(verify({ payload: tampered }), { ok: false }, 'a changed payload does not verify');
  t.same(verify({ signatureBase64: Buffer.alloc(64).toString('base64') }), { ok: false });
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
  const wrongType = verify({ publicKeyPem: rsa.export({ type: 'spki', format: 'pem' }).toString() });
  t.equal(wrongType.ok, false);
  t.match(wrongType.ok ? '' : wrongType.error, /is not ed25519/, 'a key problem is an error, not a no');
});

t.test('the worker entry claims a batch of paths in order, naming each failure', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'hb-workers-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await writeFile(join(root, 'a.txt'), 'abc');
  await symlink(join(root, 'a.txt'), join(root, 'link.txt'));
  const r = run({ op: 'claim', root, paths: ['a.txt', 'gone.txt', 'link.txt'] }) as any[];
  t.equal(r.length, 3);
  t.match(r[0], {
    ok: true,
    path: 'a.txt',
    size: 3,
    sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
  });
  t.match(r[1], { ok: false, path: 'gone.txt', missing: true });
  t.match(r[2], { ok: false, path: 'link.txt', missing: false });
});

t.test('the worker entry finds a credential in a JSON text whatever escapes spell it', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'hb-workers-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const secret = 'a/secret-value-of-32-bytes-0123456';
  const files: Record<string, [string, boolean]> = {
    'plain.txt': [`x ${secret} y`, true],
    'escaped.json': [JSON.stringify({ k: secret }).replace('a/', '\\u0061\\/'), true],
    'key.json': [`{"\\u0061/secret-value-of-32-bytes-0123456": 1}`, true],
    'lines.jsonl': [`not json\n["\\u0061/secret-value-of-32-bytes-0123456"]\n`, true],
    // Only lines that can hold a string are parsed: an object, an array or a string, after JSON's
    // whitespace (a line of a number, true, false or null cannot).
    'indented.jsonl': [`\xff\\\n \t\r{"k": "\\u0061/secret-value-of-32-bytes-0123456"}\n`, true],
    'string.jsonl': [`\\ binary\n\t"\\u0061/secret-value-of-32-bytes-0123456"\n`, true],
    'other.md': [`\\u0061/secret-value-of-32-bytes-0123456`, false],
    'clean.json': [JSON.stringify({ k: 'a\\b', v: [1, null, { w: 'nothing here' }] }), false],
  };
  for (const [name, [text]] of Object.entries(files)) await writeFile(join(root, name), text);
  const r = run({ op: 'claim', root, paths: Object.keys(files), needles: [secret] }) as any[];
  for (const [i, [name, [, leaked]]] of Object.entries(files).entries())
    t.equal(r[i].leaked, leaked, `${name}: ${leaked ? 'found' : 'not found (no reader decodes it)'}`);
  t.equal(
    decodedJsonLeak(Buffer.from('{"k":"\\u0061/secret-value-of-32-bytes-0123456"}'), []),
    false,
    'no needles',
  );
});

t.test('through the pool: a valid signature verifies, an invalid one fails', async (t) => {
  t.same(await pool.verifyEd25519({ payload, signatureBase64, publicKeyPem }), { ok: true });
  t.same(await pool.verifyEd25519({ payload: tampered, signatureBase64, publicKeyPem }), { ok: false });
  const other = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
  t.same(await pool.verifyEd25519({ payload, signatureBase64, publicKeyPem: other }), { ok: false });
});

t.test('the pooled inventory equals the inline one and keeps its problems', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'hb-inventory-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await mkdir(join(root, 'docs'));
  for (let i = 0; i < 150; i++) await writeFile(join(root, 'docs', `f${i}.txt`), `file ${i}\n`);
  await writeFile(join(root, 'big.bin'), Buffer.alloc(300 * 1024, 7));
  await mkdir(join(root, 'review'));
  await writeFile(join(root, 'review', 'review.json'), '{}');
  const inline = await buildInventory(root);
  const before = pool.figures.completed;
  const pooled = await buildInventory(root, pool);
  t.equal(inline.entries.length, 151, 'post-review paths are excluded');
  t.same(pooled, inline);
  const tasks = pool.figures.completed - before;
  t.ok(tasks >= 1 && tasks < 151, `small files share tasks (${tasks} tasks for 151 files)`);
  await symlink(join(root, 'big.bin'), join(root, 'docs', 'link'));
  const linked = await buildInventory(root, pool);
  t.same(linked.problems, ['inventory: docs/link is a symbolic link']);
  // A file the walk lists but the claim refuses is a problem either way, never an entry dropped.
  await rm(join(root, 'docs', 'link'));
  const outside = await mkdtemp(join(tmpdir(), 'hb-outside-'));
  t.teardown(() => rm(outside, { recursive: true, force: true }));
  await writeFile(join(outside, 'secret'), 'owned outside the root\n');
  await link(join(outside, 'secret'), join(root, 'docs', 'hard'));
  for (const [name, hasher] of [
    ['inline', undefined],
    ['pooled', pool],
  ] as const) {
    t.same(
      (await buildInventory(root, hasher)).problems,
      ['inventory: docs/hard is a hard link (2 names)'],
      name,
    );
  }
});

t.test('the review-signature rule uses the pool and still refuses a bad signature', async (t) => {
  const f = await buildFixture(t);
  const before = pool.figures.completed;
  t.same((await f.run()).problems, [], 'inline: the known-good fixture passes');
  const pooled = await runFinishLine(f.facts, { ...f.env, workers: pool });
  t.same(pooled.problems, [], 'pooled: the known-good fixture passes');
  t.ok(pool.figures.completed > before, 'the rule ran tasks in the pool');
  await f.mutate('review/review.json', (d) => {
    d.signature.value = Buffer.alloc(64, 1).toString('base64');
  });
  const r = await runFinishLine(f.facts, { ...f.env, workers: pool });
  t.ok(
    r.problems.includes(`review-signature: the review signature does not verify with key ${f.keyId}`),
    JSON.stringify(r.problems),
  );
});

t.test(
  'the validator child given HARNESS_WORKERS passes the known-good run and refuses an unsigned change',
  async (t) => {
    const f = await buildFixture(t);
    const gate = createFinishLineGate({ concurrency: 1, deadlineMs: 60_000, workers: 2 });
    t.same(await gate(f.facts, f.env), []);
    await writeFile(join(f.root, 'late.txt'), 'added after signing');
    t.ok(
      (await gate(f.facts, f.env)).includes('review-signature: unsigned evidence change: late.txt was added'),
    );
  },
);
