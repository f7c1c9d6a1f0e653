import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import t from 'tap';
import { DEFAULT_ARTIFACT_BY_NODE } from '../../src/contract/index.js';
import { runFinishLine } from '../../src/validators/finish-line.js';
import { isPostReview } from '../../src/validators/inventory.js';
import { changedWhileChecked, type VerifiedDigests } from '../../src/validators/verified-bytes.js';
import { buildFixture, type Fixture } from '../helpers/finish-line-fixture.js';

/**
 * The validators decide only on the bytes the bridge hashed (FinishLineEnv.verified): a file whose
 * bytes at the validators' read are not the verified ones is a named problem, never a verdict on
 * other bytes. Deterministic: the file on disk simply differs from the digest handed in. The
 * paths named inside documents are covered with their rules: the authoritative assurance in
 * finish-line-run-packet.test.ts, a self-heal patch in self-heal-proposal-rule.test.ts.
 */
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const OTHER = 'f'.repeat(64);

async function filesUnder(root: string, dir = root): Promise<string[]> {
  const out: string[] = [];
  for (const d of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, d.name);
    if (d.isDirectory()) out.push(...(await filesUnder(root, full)));
    else out.push(relative(root, full).split('\\').join('/'));
  }
  return out.sort();
}

/** Every file of the fixture's root at its current digest: what an honest gate hands over. */
async function honest(f: Fixture): Promise<Record<string, string>> {
  const verified: Record<string, string> = {};
  for (const path of await filesUnder(f.root)) verified[path] = sha256(await readFile(join(f.root, path)));
  return verified;
}

const runWith = (f: Fixture, verified: VerifiedDigests) => runFinishLine(f.facts, { ...f.env, verified });

t.test('the known-good run holds when every read is the verified bytes', async (t) => {
  const f = await buildFixture(t);
  const result = await runWith(f, await honest(f));
  t.same(result.problems, []);
});

t.test('a failing proof on disk is not judged when the verified proof is other bytes', async (t) => {
  const f = await buildFixture(t, { commissioned: false, corrective: false });
  const verified = await honest(f);
  // The bridge hashed a failing proof; the validators are shown a passing one (the A-B-A swap).
  verified[DEFAULT_ARTIFACT_BY_NODE.prove] = sha256('{"status":"failed"}');
  const result = await runWith(f, verified);
  const proof = result.rules.find((r) => r.name === 'proof')?.problems;
  t.same(proof, [`proof: ${changedWhileChecked(DEFAULT_ARTIFACT_BY_NODE.prove)}`]);
});

t.test('every file a rule reads is compared with its verified digest', async (t) => {
  const f = await buildFixture(t);
  const all = await honest(f);
  for (const path of Object.keys(all)) {
    const result = await runWith(f, { ...all, [path]: OTHER });
    const named = result.problems.filter((p) => p.endsWith(changedWhileChecked(path)));
    // handoff/ is read by no rule (the inventory leaves post-review paths out), only by the
    // privacy check's secret scan, which reads every verified file.
    if (path.startsWith('handoff/'))
      t.same(named, [changedWhileChecked(path)], `${path} is read by the secret scan alone`);
    else t.ok(named.length > 1, `${path}: ${JSON.stringify(result.problems)}`);
  }
});

t.test('a document the bridge found absent cannot be read into the verdict', async (t) => {
  const f = await buildFixture(t);
  const result = await runWith(f, { ...(await honest(f)), 'rca/rca.json': null });
  const rules = result.rules.filter((r) =>
    r.problems.some((p) => p.endsWith(changedWhileChecked('rca/rca.json'))),
  );
  t.ok(
    rules.some((r) => r.name === 'corrective-work'),
    JSON.stringify(result.problems),
  );
});

t.test('a verified file the inventory walk does not list is a problem', async (t) => {
  const f = await buildFixture(t);
  const hidden = 'extra/hidden.txt';
  t.notOk(isPostReview(hidden));
  const result = await runWith(f, { ...(await honest(f)), [hidden]: OTHER });
  t.same(result.rules.find((r) => r.name === 'review-signature')?.problems, [
    `review-signature: ${changedWhileChecked(hidden)}`,
  ]);
});

t.test('a file only the inventory reads is compared with its verified digest', async (t) => {
  const f = await buildFixture(t);
  const extra = 'notes/extra.txt';
  await f.write(extra, 'signed by the reviewer');
  await f.resign();
  await f.repack();
  t.same((await runWith(f, await honest(f))).problems, [], 'the signed root holds as verified');
  // The bridge hashed other bytes there than the signed ones the inventory walk hashes.
  const result = await runWith(f, { ...(await honest(f)), [extra]: OTHER });
  t.same(result.problems, [`review-signature: ${changedWhileChecked(extra)}`, changedWhileChecked(extra)]);
});

t.test('without verified digests the rules read what is on disk (a local check)', async (t) => {
  const f = await buildFixture(t);
  t.same((await f.run()).problems, []);
});
