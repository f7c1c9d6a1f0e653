import type { Test } from 'tap';
import type { ApprovalRecord } from '../../src/contract/index.js';
import { buildFixture, type Fixture } from './finish-line-fixture.js';

/** The approval (production-readiness, cto, rate-limiting later) in `status`. */
export const approval = (status: ApprovalRecord['status']): ApprovalRecord => ({
  nodeId: 'production-readiness',
  owner: 'cto',
  scope: 'rate-limiting later',
  status,
  requestedSeq: 5,
  requestedAt: '2025-01-01T00:00:00Z',
  decidedSeq: status === 'pending' ? null : 6,
  decidedAt: status === 'pending' ? null : '2025-01-01T00:00:01Z',
});

/** An active packet waiver tied to that approval. */
export const waiver = {
  waiverId: 'w-rate',
  status: 'active',
  reason: 'launch behind a gateway',
  approval: { nodeId: 'production-readiness', owner: 'cto', scope: 'rate-limiting later' },
};

/** A commissioned known-good fixture whose rate-limiting layer is waived by `waiver` (no approval yet). */
export async function waivedFixture(t: Test): Promise<Fixture> {
  const f = await buildFixture(t);
  await f.mutate('production/layer-assessment.json', (d) => {
    const layer = d.layers.find((l: { layer: string }) => l.layer === 'rate-limiting');
    layer.status = 'waived';
    layer.waiverId = 'w-rate';
  });
  await f.resign();
  await f.repack((p) => p.waivers.push(waiver));
  return f;
}
