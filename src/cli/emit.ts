import { randomUUID } from 'node:crypto';
import { type Command, Option } from 'commander';
import type { RunEvent, RunMode } from '../contract/index.js';
import {
  ACTORS,
  EVENT_SOURCES,
  EVENT_TYPES,
  NODE_IDS,
  NODE_STATES,
  RUN_ID_PATTERN,
  RUN_MODES,
  STATUSES,
} from '../contract/index.js';
import { refuseIntegrityKey, requireEnv, UsageError } from './env.js';
import { BridgeTimeout, bridgeRequest, describeFailure } from './http.js';
import { terminalJson } from './terminal.js';

const DEFAULT_SOURCE: Record<RunMode, RunEvent['eventSource']> = {
  live: 'api',
  replay: 'local-jsonl',
  blueprint: 'static-blueprint',
};

/** Field name -> option attribute (commander camel-cases the flags). */
const OPTIONAL_FIELDS = [
  'artifact',
  'artifactRoot',
  'adapterPath',
  'skipReason',
  'failureReason',
  'recoveryPath',
  'approvalOwner',
  'approvalScope',
  'selfHealPrUrl',
] as const;

/**
 * What `--status` and `--node-state` each change: the two are independent, and an event moves its
 * node only by its type or an explicit `--node-state` (CONTRACT 5).
 */
const STATUS_HELP =
  "the event's own outcome. It never moves the node. On artifact.written it is the artifact's outcome: failed or skipped marks the artifact so (which blocks run.completed), anything else verified. So `artifact.written --status passed` records a verified artifact and leaves the node active";
const NODE_STATE_HELP =
  'the state the event puts its node in, instead of the one its type sets (node.entered: active, node.skipped: skipped, node.failed: failed, approval.requested: needs_approval; other types: unchanged). A required node counts for run.completed once it is passed with its artifact verified: `harness node pass` posts both in one event';

/** The options every event-posting command shares: who posts it, and in which mode and source. */
export function addEventOrigin(command: Command): Command {
  return command
    .addOption(new Option('--actor <actor>').choices(ACTORS).default('harness'))
    .addOption(new Option('--mode <runMode>').choices(RUN_MODES).default('live'))
    .addOption(
      new Option(
        '--source <eventSource>',
        'default: api (live), local-jsonl (replay), static-blueprint',
      ).choices(EVENT_SOURCES),
    )
    .option(
      '--event-id <id>',
      'the event ID (default: a new UUID); the same ID posted again is answered as a duplicate, never stored twice',
    );
}

/** The fields addEventOrigin's options give an event. */
export function eventOrigin(
  opts: Record<string, unknown>,
): Pick<RunEvent, 'id' | 'actor' | 'runMode' | 'eventSource'> {
  const mode = opts['mode'] as RunMode;
  return {
    ...(opts['eventId'] === undefined ? {} : { id: opts['eventId'] as string }),
    actor: opts['actor'] as RunEvent['actor'],
    runMode: mode,
    eventSource: (opts['source'] as RunEvent['eventSource'] | undefined) ?? DEFAULT_SOURCE[mode],
  };
}

/**
 * Posts one event with the access token (and the human token for a grant or deny) and prints the
 * bridge's answer: exit 0 when it is stored, 1 with the refusal on stderr otherwise. Shared by
 * `harness emit` and `harness node`. The event gets its ID here when it has none, so that a post
 * the bridge did not answer in time can be repeated safely: the error names the ID to repeat it with.
 */
export async function postEvent(
  command: string,
  runId: string,
  event: Record<string, unknown>,
): Promise<void> {
  refuseIntegrityKey(command);
  // As approve, explain and run create do: `.` or `..` would otherwise reach another route.
  if (!RUN_ID_PATTERN.test(runId)) throw new UsageError('the run ID is not canonical');
  const headers: Record<string, string> = {
    'x-harness-bridge-token': requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN'),
  };
  const type = event['type'];
  if (type === 'approval.granted' || type === 'approval.denied') {
    // An agent's shell never holds the human token: point at the human's command, not at it.
    const human = process.env['HARNESS_HUMAN_APPROVAL_TOKEN'];
    if (!human)
      throw new UsageError(
        `${type} is a human's decision: run \`harness approve\` in the approval shell (HARNESS_HUMAN_APPROVAL_TOKEN is not set here)`,
      );
    headers['x-harness-human-token'] = human;
  }
  event['id'] ??= randomUUID();
  let res: Awaited<ReturnType<typeof bridgeRequest>>;
  try {
    res = await bridgeRequest(`/runs/${encodeURIComponent(runId)}/events`, {
      method: 'POST',
      body: event,
      headers,
    });
  } catch (err) {
    if (!(err instanceof BridgeTimeout)) throw err;
    throw new BridgeTimeout(
      `${err.message}; it may have stored the event: post it again with --event-id ${String(event['id'])}, which the bridge answers as a duplicate if it did`,
    );
  }
  if (res.status >= 300) {
    process.stderr.write(`${describeFailure(res)}\n`);
    process.exitCode = 1;
    return;
  }
  process.stdout.write(
    `${terminalJson({ seq: res.body['seq'], duplicate: res.body['duplicate'] === true, event: res.body['event'] })}\n`,
  );
}

export function registerEmit(program: Command): void {
  const emit = program
    .command('emit')
    .description('post one event to the bridge (token from HARNESS_BRIDGE_ACCESS_TOKEN)')
    .argument('<runId>')
    .argument('<type>', EVENT_TYPES.join(', '))
    .argument('<nodeId>', NODE_IDS.join(', '))
    .argument('<message>')
    .option('--artifact <path>')
    .addOption(new Option('--status <status>', STATUS_HELP).choices(STATUSES).default('ok'));
  addEventOrigin(emit)
    .addOption(new Option('--node-state <state>', NODE_STATE_HELP).choices(NODE_STATES))
    .option('--artifact-root <dir>')
    .option('--adapter-path <path>')
    .option('--skip-reason <text>')
    .option('--failure-reason <text>')
    .option('--recovery-path <text>')
    .option('--approval-owner <owner>')
    .option('--approval-scope <scope>')
    .option('--self-heal-pr-url <url>')
    .action(
      async (
        runId: string,
        type: string,
        nodeId: string,
        message: string,
        opts: Record<string, string | undefined>,
      ) => {
        const event: Record<string, unknown> = {
          type,
          nodeId,
          message,
          status: opts['status'],
          ...eventOrigin(opts),
        };
        if (opts['nodeState'] !== undefined) event['nodeState'] = opts['nodeState'];
        for (const field of OPTIONAL_FIELDS) if (opts[field] !== undefined) event[field] = opts[field];
        await postEvent('harness emit', runId, event);
      },
    );
}
