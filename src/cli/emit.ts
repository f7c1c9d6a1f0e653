import { type Command, Option } from 'commander';
import type { RunEvent, RunMode } from '../contract/index.js';
import {
  ACTORS,
  EVENT_SOURCES,
  EVENT_TYPES,
  NODE_IDS,
  RUN_ID_PATTERN,
  RUN_MODES,
  STATUSES,
} from '../contract/index.js';
import { refuseIntegrityKey, requireEnv, UsageError } from './env.js';
import { bridgeRequest, describeFailure } from './http.js';
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

export function registerEmit(program: Command): void {
  program
    .command('emit')
    .description('post one event to the bridge (token from HARNESS_BRIDGE_ACCESS_TOKEN)')
    .argument('<runId>')
    .argument('<type>', EVENT_TYPES.join(', '))
    .argument('<nodeId>', NODE_IDS.join(', '))
    .argument('<message>')
    .option('--artifact <path>')
    .addOption(new Option('--status <status>').choices(STATUSES).default('ok'))
    .addOption(new Option('--actor <actor>').choices(ACTORS).default('harness'))
    .addOption(new Option('--mode <runMode>').choices(RUN_MODES).default('live'))
    .addOption(new Option('--source <eventSource>').choices(EVENT_SOURCES))
    .addOption(
      new Option('--node-state <state>').choices([
        'passed',
        'active',
        'failed',
        'skipped',
        'pending',
        'needs_approval',
      ]),
    )
    .option('--artifact-root <dir>')
    .option('--adapter-path <path>')
    .option('--skip-reason <text>')
    .option('--failure-reason <text>')
    .option('--recovery-path <text>')
    .option('--approval-owner <owner>')
    .option('--approval-scope <scope>')
    .option('--self-heal-pr-url <url>')
    .option('--event-id <id>')
    .action(
      async (
        runId: string,
        type: string,
        nodeId: string,
        message: string,
        opts: Record<string, string | undefined>,
      ) => {
        refuseIntegrityKey('harness emit');
        // As approve, explain and run create do: `.` or `..` would otherwise reach another route.
        if (!RUN_ID_PATTERN.test(runId)) throw new UsageError('the run ID is not canonical');
        const token = requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN');
        const mode = opts['mode'] as RunMode;
        const event: Record<string, unknown> = {
          type,
          nodeId,
          message,
          status: opts['status'],
          actor: opts['actor'],
          runMode: mode,
          eventSource: opts['source'] ?? DEFAULT_SOURCE[mode],
        };
        if (opts['eventId'] !== undefined) event['id'] = opts['eventId'];
        if (opts['nodeState'] !== undefined) event['nodeState'] = opts['nodeState'];
        for (const field of OPTIONAL_FIELDS) if (opts[field] !== undefined) event[field] = opts[field];
        const headers: Record<string, string> = { 'x-harness-bridge-token': token };
        if (type === 'approval.granted' || type === 'approval.denied') {
          // An agent's shell never holds the human token: point at the human's command, not at it.
          const human = process.env['HARNESS_HUMAN_APPROVAL_TOKEN'];
          if (!human)
            throw new UsageError(
              `${type} is a human's decision: run \`harness approve\` in the approval shell (HARNESS_HUMAN_APPROVAL_TOKEN is not set here)`,
            );
          headers['x-harness-human-token'] = human;
        }
        const res = await bridgeRequest(`/runs/${encodeURIComponent(runId)}/events`, {
          method: 'POST',
          body: event,
          headers,
        });
        if (res.status >= 300) {
          process.stderr.write(`${describeFailure(res)}\n`);
          process.exitCode = 1;
          return;
        }
        process.stdout.write(
          `${terminalJson({ seq: res.body['seq'], duplicate: res.body['duplicate'] === true, event: res.body['event'] })}\n`,
        );
      },
    );
}
