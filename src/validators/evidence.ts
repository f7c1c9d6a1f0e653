import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { InventoryEntryT, RosterT } from '../contract/artifacts/index.js';
import { NODE_IDS, type NodeId } from '../contract/index.js';

/**
 * The frozen pre-review evidence bundle (docs/evidence-writers.md, "Evidence bundle"). One definition
 * used by the validator, `harness run create --print-evidence-bundle` and `harness review sign`:
 * if the tools and the gate computed it differently, honest reviews would fail or forged ones pass.
 * Every digest is SHA-256 over a domain prefix and RFC 8785 canonical JSON, so bytes signed or
 * hashed for one record type can never be replayed as another.
 */
export const EVIDENCE_BUNDLE_SCHEMA = 'harness.evidence-bundle.v1';
export const INVENTORY_DOMAIN = 'harness.inventory.v1\n';
export const BUNDLE_DOMAIN = 'harness.evidence-bundle.v1\n';
export const REVIEW_SIGNATURE_DOMAIN = 'harness.review.v2.signature\n';

export interface EvidenceBundle {
  schema: typeof EVIDENCE_BUNDLE_SCHEMA;
  runId: string;
  inventoryDigest: string;
  inventoryCount: number;
  /** Each node whose configured artifact is in the inventory, in flow order. */
  nodes: { nodeId: NodeId; path: string; sha256: string }[];
}

export function canonicalBytes(value: unknown): Buffer {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return Buffer.from(text, 'utf8');
}

function domainDigest(domain: string, value: unknown): string {
  const h = createHash('sha256').update(domain, 'utf8').update(canonicalBytes(value));
  return `sha256:${h.digest('hex')}`;
}

export function inventoryDigest(inventory: readonly InventoryEntryT[]): string {
  return domainDigest(INVENTORY_DOMAIN, inventory);
}

export function evidenceBundle(
  runId: string,
  inventory: readonly InventoryEntryT[],
  artifactByNode: Readonly<Record<NodeId, string>>,
): EvidenceBundle {
  const byPath = new Map(inventory.map((e) => [e.path, e.sha256]));
  const nodes: EvidenceBundle['nodes'] = [];
  for (const nodeId of NODE_IDS) {
    const path = artifactByNode[nodeId];
    const sha256 = byPath.get(path);
    if (sha256 !== undefined) nodes.push({ nodeId, path, sha256 });
  }
  return {
    schema: EVIDENCE_BUNDLE_SCHEMA,
    runId,
    inventoryDigest: inventoryDigest(inventory),
    inventoryCount: inventory.length,
    nodes,
  };
}

export function evidenceBundleDigest(bundle: EvidenceBundle): string {
  return domainDigest(BUNDLE_DOMAIN, bundle);
}

/** What the independent reviewer signs: the bundle digest, the inventory and the full roster. */
export interface ReviewStatement {
  runId: string;
  verdict: 'approved' | 'changes-requested';
  evidenceBundleDigest: string;
  inventory: readonly InventoryEntryT[];
  roster: RosterT;
}

export function reviewSigningBytes(s: ReviewStatement): Buffer {
  const body = canonicalBytes({
    schema: 'harness.review-statement.v1',
    runId: s.runId,
    verdict: s.verdict,
    evidenceBundleDigest: s.evidenceBundleDigest,
    inventory: s.inventory,
    roster: s.roster,
  });
  return Buffer.concat([Buffer.from(REVIEW_SIGNATURE_DOMAIN, 'utf8'), body]);
}
