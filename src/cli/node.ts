import type { Command } from 'commander';
import { NODE_IDS, type NodeId, RUN_ID_PATTERN } from '../contract/index.js';
import { addEventOrigin, eventOrigin, postEvent } from './emit.js';
import { refuseIntegrityKey, requireEnv, UsageError } from './env.js';
import { bridgeRequest, describeFailure } from './http.js';

/**
 * `harness node pass|skip|fail <runId> <nodeId>`: the node decisions a run needs, each one event
 * posted through emit's client, carrying what the bridge requires of it (CONTRACT 5). `pass`
 * records the node's artifact and passes the node in the same event (`artifact.written`, status
 * and nodeState `passed`): the bridge verifies the file before it stores the event, so a node is
 * never left passed with an artifact it refused, nor with a verified artifact but still active.
 */
type Opts = Record<string, string | undefined>;

function nodeIdOf(nodeId: string): NodeId {
  if (!(NODE_IDS as readonly string[]).includes(nodeId))
    throw new UsageError(`${nodeId} is not a node ID (${NODE_IDS.join(', ')})`);
  return nodeId as NodeId;
}

/** The bridge refuses a blank reason (CONTRACT 5); refusing it here sends nothing. */
function reason(opts: Opts, name: string, flag: string): string {
  const value = opts[name];
  if (value === undefined || value.trim() === '') throw new UsageError(`${flag} must not be blank`);
  return value;
}

/** The node's configured artifact, as the run's sealed config names it (null: none configured). */
async function configuredArtifact(runId: string, nodeId: NodeId): Promise<string | null> {
  refuseIntegrityKey('harness node pass');
  if (!RUN_ID_PATTERN.test(runId)) throw new UsageError('the run ID is not canonical');
  const res = await bridgeRequest(`/runs/${encodeURIComponent(runId)}?eventLimit=1`, {
    headers: { 'x-harness-bridge-token': requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN') },
  });
  if (res.status !== 200) throw new Error(describeFailure(res));
  const nodes = (res.body['run'] as { nodes?: { id: string; artifact: string | null }[] } | undefined)?.nodes;
  const node = nodes?.find((n) => n.id === nodeId);
  if (!node) throw new Error(`the bridge's view of run ${runId} has no node ${nodeId}`);
  return node.artifact;
}

/** skip and fail: the event, and the reasons the bridge requires of it (field, flag, help). */
const DECISIONS = [
  {
    name: 'skip',
    type: 'node.skipped',
    status: 'skipped',
    description:
      'skip the node (node.skipped); a required node skipped with a reason counts for run.completed',
    reasons: [['skipReason', '--reason', 'why the node is skipped (skipReason, required)']],
  },
  {
    name: 'fail',
    type: 'node.failed',
    status: 'failed',
    description: 'fail the node (node.failed); a failed required node blocks run.completed',
    reasons: [
      ['failureReason', '--reason', 'what failed (failureReason, required)'],
      ['recoveryPath', '--recovery', 'how the run recovers (recoveryPath, required)'],
    ],
  },
] as const;

export function registerNode(program: Command): void {
  const node = program.command('node').description('pass, skip or fail a node of a run (one event each)');
  addEventOrigin(
    node
      .command('pass')
      .description(
        "record the node's artifact and pass the node in one artifact.written event (a node with no configured artifact: one gate.fired)",
      )
      .argument('<runId>')
      .argument('<nodeId>', NODE_IDS.join(', '))
      .option('--artifact <path>', "the artifact path (default: the node's configured artifact)")
      .option('--message <text>', 'the event message (default: "<nodeId> passed")'),
  ).action(async (runId: string, id: string, opts: Opts) => {
    const nodeId = nodeIdOf(id);
    const artifact = opts['artifact'] ?? (await configuredArtifact(runId, nodeId));
    await postEvent('harness node pass', runId, {
      type: artifact === null ? 'gate.fired' : 'artifact.written',
      nodeId,
      message: opts['message'] ?? `${nodeId} passed`,
      status: 'passed',
      nodeState: 'passed',
      ...eventOrigin(opts),
      ...(artifact === null ? {} : { artifact }),
    });
  });
  for (const d of DECISIONS) {
    const command = node
      .command(d.name)
      .description(d.description)
      .argument('<runId>')
      .argument('<nodeId>', NODE_IDS.join(', '));
    for (const [, flag, help] of d.reasons) command.requiredOption(`${flag} <text>`, help);
    addEventOrigin(
      command.option('--message <text>', `the event message (default: "<nodeId> ${d.status}")`),
    ).action(async (runId: string, id: string, opts: Opts) => {
      const nodeId = nodeIdOf(id);
      const event: Record<string, unknown> = {
        type: d.type,
        nodeId,
        message: opts['message'] ?? `${nodeId} ${d.status}`,
        status: d.status,
        ...eventOrigin(opts),
      };
      for (const [field, flag] of d.reasons) event[field] = reason(opts, flag.slice(2), flag);
      await postEvent(`harness node ${d.name}`, runId, event);
    });
  }
}
