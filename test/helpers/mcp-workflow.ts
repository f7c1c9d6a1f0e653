import { NODE_IDS, type NodeId } from '../../src/contract/index.js';
import { createFinishLineGate } from '../../src/validators/runner.js';
import { startTestBridge, type TestBridge } from './bridge.js';
import { passingAssessment, passingProof } from './finish-line-fixture.js';
import { live, type McpHarness } from './mcp.js';

/** A bridge whose completion runs the real finish-line validator children, as `harness bridge` does. */
export function startGatedBridge(): Promise<TestBridge> {
  return startTestBridge(undefined, {
    makeFinishLine: () => createFinishLineGate({ concurrency: 1, deadlineMs: 60_000 }),
  });
}

const TS = '2025-01-01T00:00:00.000Z';
const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

/**
 * Content for all 14 default artifacts of an ordinary (not commissioned, not corrective) run:
 * a feature route, a passing harness.proof.v1 and a harness.production-readiness.v2 assessment
 * of the 13 canonical layers bound to the run; the other artifacts are free-form.
 */
export function goodArtifacts(runId: string): Record<NodeId, string> {
  return {
    intake: json({ runId, request: 'add a health endpoint' }),
    route: json({
      schema: 'harness.route.v1',
      routeId: 'route-1',
      runId,
      generatedAt: TS,
      workType: 'feature',
      goal: { goalId: 'goal-1', runId, statement: 'a health endpoint answers 200' },
      summary: 'small feature',
    }),
    'code-intelligence': json({ nodes: [], edges: [] }),
    'design-anchors': json({ anchors: ['health route'] }),
    'system-design': '# System design\n\nOne route.\n',
    'production-readiness': json(passingAssessment(runId, TS)),
    'cloud-platform': json({ services: [] }),
    implement: '{"step":"edit"}\n{"step":"test"}\n',
    redzone: json({ approvals: [] }),
    'qa-break-it': '# Break-it results\n\nNothing broke.\n',
    prove: json(passingProof(runId, TS)),
    'live-smoke': json({ status: 'passed' }),
    'self-heal': '# Self-heal\n\nNo harness gap found.\n',
    handoff: '# Handoff\n\nDone.\n',
  };
}

/** Writes and passes every node through the tool server alone; returns every tool failure. */
export async function passAllNodes(
  mcp: McpHarness,
  runId: string,
  contents: Record<NodeId, string>,
  artifacts: Record<NodeId, string>,
): Promise<string[]> {
  const failures: string[] = [];
  const check = (step: string, r: { isError: boolean; body: Record<string, unknown> }) => {
    if (r.isError) failures.push(`${step}: ${JSON.stringify(r.body)}`);
  };
  check(
    'intake entered',
    await mcp.call('harness.emit_event', { runId, type: 'node.entered', nodeId: 'intake', ...live }),
  );
  for (const nodeId of NODE_IDS) {
    check(
      `${nodeId} written`,
      await mcp.call('harness.write_artifact', {
        runId,
        nodeId,
        path: artifacts[nodeId],
        content: contents[nodeId],
        actor: 'runtime-a',
      }),
    );
    check(
      `${nodeId} passed`,
      await mcp.call('harness.emit_event', {
        runId,
        type: 'gate.fired',
        nodeId,
        nodeState: 'passed',
        ...live,
        status: 'passed',
      }),
    );
  }
  return failures;
}

/** Every event type in the run's journal, read back through the bridge. */
export async function eventTypes(bridge: TestBridge, runId: string): Promise<string[]> {
  const r = await bridge.req('GET', `/runs/${runId}?eventLimit=200&eventCursor=0`);
  return (r.body['run'].events as { type: string }[]).map((e) => e.type);
}
