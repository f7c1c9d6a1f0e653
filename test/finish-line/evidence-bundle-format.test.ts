import { createHash, verify } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import t from 'tap';
import { NODE_IDS } from '../../src/contract/index.js';
import { buildFixture } from '../helpers/finish-line-fixture.js';

/**
 * The evidence bundle and the signed review bytes, computed here from their description in
 * docs/evidence-writers.md ("Evidence bundle") alone, equal what `harness review sign` produced: a
 * reviewer signing with another implementation of the documented format gets a review the gate
 * accepts, and the gate cannot drift from the format without this failing.
 */
const POST_REVIEW = (p: string) =>
  p.startsWith('review/') || p.startsWith('handoff/') || p === 'run/packet.json';
const jcs = (v: unknown) => {
  const text = canonicalize(v);
  if (text === undefined) throw new TypeError('no canonical form');
  return text;
};
const digest = (domain: string, v: unknown) =>
  `sha256:${createHash('sha256').update(domain).update(jcs(v)).digest('hex')}`;

async function files(root: string, dir = ''): Promise<string[]> {
  const out: string[] = [];
  for (const d of await readdir(join(root, dir), { withFileTypes: true })) {
    const rel = dir === '' ? d.name : `${dir}/${d.name}`;
    if (d.isDirectory()) out.push(...(await files(root, rel)));
    else out.push(rel);
  }
  return out;
}

t.test('the signed review follows the documented evidence bundle and statement', async (t) => {
  const f = await buildFixture(t);
  const review = await f.read('review/review.json');

  const inventory = [];
  for (const path of (await files(f.root)).filter((p) => !POST_REVIEW(p)).sort()) {
    const bytes = await readFile(join(f.root, path));
    inventory.push({ path, sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length });
  }
  t.same(review.inventory, inventory, 'the inventory: every pre-review file, sorted');

  const byPath = new Map(inventory.map((e) => [e.path, e.sha256]));
  const artifactByNode = f.facts.config.artifactByNode;
  const nodes = NODE_IDS.filter((id) => byPath.has(artifactByNode[id])).map((nodeId) => ({
    nodeId,
    path: artifactByNode[nodeId],
    sha256: byPath.get(artifactByNode[nodeId]),
  }));
  t.ok(nodes.length > 0, 'the fixture binds node artifacts');
  const bundle = {
    schema: 'harness.evidence-bundle.v1',
    runId: f.runId,
    inventoryDigest: digest('harness.inventory.v1\n', inventory),
    inventoryCount: inventory.length,
    nodes,
  };
  t.equal(review.evidenceBundleDigest, digest('harness.evidence-bundle.v1\n', bundle));

  const statement = jcs({
    schema: 'harness.review-statement.v1',
    runId: f.runId,
    verdict: review.verdict,
    evidenceBundleDigest: review.evidenceBundleDigest,
    inventory,
    roster: review.roster,
  });
  const signed = Buffer.from(`harness.review.v2.signature\n${statement}`, 'utf8');
  const signature = Buffer.from(review.signature.value, 'base64');
  t.ok(verify(null, signed, f.publicKeyPem, signature), 'the signature covers the documented bytes');
  t.same(await f.rule('review-signature'), [], 'and the gate accepts it');
});
