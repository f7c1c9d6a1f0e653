import { createInterface } from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import { NODE_IDS, RUN_ID_PATTERN, type RunMode, SOURCES_BY_MODE } from '../contract/index.js';
import type { RunViewT } from '../contract/views.js';
import { refuseCredentialArguments, refuseIntegrityKey, requireEnv, UsageError } from './env.js';
import { bridgeRequest, describeFailure } from './http.js';
import { terminalText } from './terminal.js';

export interface ApproveOptions {
  owner: string;
  scope: string;
  grant?: boolean;
  deny?: boolean;
  reason?: string;
  /** A denial fails its node (CONTRACT 5), so it carries the failed state's fields (SPEC States). */
  failureReason?: string;
  recoveryPath?: string;
  node?: string;
  yes?: boolean;
}

export interface ApproveIO {
  env: NodeJS.ProcessEnv;
  /** The raw arguments, checked for credential values before anything else happens. */
  argv: readonly string[];
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable;
  stderr: Writable;
}

type Approval = RunViewT['approvals'][number];

/**
 * The human approval shell. Both tokens come from the environment only (process arguments are
 * readable by every local user); holding the integrity key as well, it refuses to start (SPEC
 * Authentication 7: an approval shell holds the access and human tokens). The operator sees exactly
 * which pending approval the decision binds to and confirms it on a terminal unless --yes. Returns
 * the exit code: 0 sent and accepted, 1 the bridge refused or could not be reached; usage and
 * environment problems throw UsageError (exit 2).
 */
export async function approve(runId: string, opts: ApproveOptions, io: ApproveIO): Promise<number> {
  refuseIntegrityKey('harness approve', io.env);
  refuseCredentialArguments(io.argv, io.env);
  if (Boolean(opts.grant) === Boolean(opts.deny))
    throw new UsageError('pass exactly one of --grant or --deny');
  if (!RUN_ID_PATTERN.test(runId)) throw new UsageError('the run ID is not canonical');
  if (opts.node !== undefined && !(NODE_IDS as readonly string[]).includes(opts.node)) {
    throw new UsageError(`--node must be one of ${NODE_IDS.join(', ')}`);
  }
  if (!opts.yes && !io.stdin.isTTY) {
    throw new UsageError('no terminal to confirm on: pass --yes to approve non-interactively');
  }
  const given = (v: string | undefined) => (v !== undefined && v.trim() !== '' ? v : undefined);
  let failure = { reason: given(opts.failureReason), path: given(opts.recoveryPath) };
  if (opts.grant && (opts.failureReason !== undefined || opts.recoveryPath !== undefined)) {
    throw new UsageError(
      '--failure-reason and --recovery-path go with --deny: a grant does not fail the node',
    );
  }
  if (opts.deny && opts.yes && (!failure.reason || !failure.path)) {
    throw new UsageError('--deny needs --failure-reason and --recovery-path: a denial fails the node');
  }
  const accessToken = requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN', io.env);
  const humanToken = requireEnv('HARNESS_HUMAN_APPROVAL_TOKEN', io.env);
  const say = (s: string) => io.stdout.write(`${s}\n`);
  const fail = (s: string) => {
    io.stderr.write(`harness approve: ${s}\n`);
    return 1;
  };
  const path = `/runs/${encodeURIComponent(runId)}`;

  let read: Awaited<ReturnType<typeof bridgeRequest>>;
  try {
    read = await bridgeRequest(
      `${path}?eventLimit=1`,
      { headers: { 'x-harness-bridge-token': accessToken } },
      io.env,
    );
  } catch (err) {
    return fail((err as Error).message);
  }
  if (read.status !== 200) return fail(describeFailure(read));
  const run = read.body['run'] as Partial<RunViewT> & { status?: string };
  // A quarantined run's view carries no approvals (the bridge no longer trusts its record) and the
  // run accepts no event: the quarantine, not a missing approval, is why nothing can be decided.
  if (run.status === 'quarantined') {
    const reasons = (run.quarantine?.reasons ?? []).map((r) => `\n  quarantined: ${terminalText(r)}`);
    return fail(`run ${runId} is quarantined and accepts no approval decision${reasons.join('')}`);
  }
  const pending = (run.approvals ?? []).filter(
    (a) =>
      a.status === 'pending' &&
      a.owner === opts.owner &&
      a.scope === opts.scope &&
      (!opts.node || a.nodeId === opts.node),
  );
  if (pending.length === 0) {
    const open = (run.approvals ?? []).filter((a) => a.status === 'pending').map(describe);
    // The run view keeps the oldest pending approvals when it must leave some out (CONTRACT 4);
    // the summary's count says whether any pending ones were left out, or only decided ones.
    const hiddenPending = Math.max(0, (run.pendingApprovals ?? open.length) - open.length);
    const hidden = hiddenPending
      ? ` (${hiddenPending} pending approvals are not in the run view: decide the older pending ones first)`
      : '';
    return fail(
      `no pending approval with this owner and scope on ${runId}${hidden}${open.length ? `; pending:\n${open.join('\n')}` : ''}`,
    );
  }
  if (pending.length > 1) {
    throw new UsageError(
      `several nodes wait for this owner and scope; add --node (${pending.map((a) => a.nodeId).join(', ')})`,
    );
  }
  const approval = pending[0] as Approval;
  const decision = opts.grant ? 'grant' : 'deny';
  say(`Run ${runId} (${run.status ?? 'unknown status'}): pending approval`);
  say(describe(approval));
  say(`Decision: ${decision.toUpperCase()}${opts.reason ? ` (reason: ${opts.reason})` : ''}`);

  if (!opts.yes) {
    const rl = createInterface({ input: io.stdin, output: io.stdout });
    // Lines are taken from the iterator, which keeps those typed (or piped) ahead of a question.
    const lines = rl[Symbol.asyncIterator]();
    const ask = async (question: string) => {
      io.stdout.write(question);
      const next = await lines.next();
      return next.done ? '' : String(next.value);
    };
    try {
      if (opts.deny) {
        failure = {
          reason: failure.reason ?? given(await ask('Failure reason (why the node fails): ')),
          path: failure.path ?? given(await ask('Recovery path (what happens next): ')),
        };
        if (!failure.reason || !failure.path)
          return fail('a denial needs a failure reason and a recovery path; nothing was sent');
        refuseCredentialArguments([failure.reason, failure.path], io.env, 'an answer');
        say(`Failure reason: ${failure.reason}\nRecovery path: ${failure.path}`);
      }
      const answer = await ask(`${decision === 'grant' ? 'Grant' : 'Deny'} this approval? [y/N] `);
      if (!/^y(es)?$/i.test(answer.trim())) return fail('not confirmed; nothing was sent');
    } finally {
      rl.close();
    }
  }

  const runMode: RunMode = run.runMode ?? 'live';
  const sources = SOURCES_BY_MODE[runMode];
  const event = {
    type: opts.grant ? 'approval.granted' : 'approval.denied',
    actor: 'human',
    runMode,
    eventSource: sources.includes('api') ? 'api' : sources[0],
    nodeId: approval.nodeId,
    message: opts.reason ?? `${opts.grant ? 'granted' : 'denied'} by the operator with harness approve`,
    status: opts.grant ? 'ok' : 'blocked',
    approvalOwner: approval.owner,
    approvalScope: approval.scope,
    ...(opts.deny ? { failureReason: failure.reason, recoveryPath: failure.path } : {}),
  };
  let posted: Awaited<ReturnType<typeof bridgeRequest>>;
  try {
    posted = await bridgeRequest(
      `${path}/events`,
      {
        method: 'POST',
        body: event,
        headers: { 'x-harness-bridge-token': accessToken, 'x-harness-human-token': humanToken },
      },
      io.env,
    );
  } catch (err) {
    return fail((err as Error).message);
  }
  if (posted.status < 200 || posted.status >= 300) return fail(describeFailure(posted));
  say(
    `${event.type} recorded for node ${approval.nodeId}${posted.body['seq'] !== undefined ? ` (seq ${String(posted.body['seq'])})` : ''}`,
  );
  return 0;
}

function describe(a: Approval): string {
  return `  node: ${a.nodeId}\n  owner: ${terminalText(a.owner)}\n  scope: ${terminalText(a.scope)}\n  requested at: ${terminalText(a.requestedAt)}`;
}

export function registerApprove(program: Command): void {
  program
    .command('approve')
    .description(
      'grant or deny a pending approval (HARNESS_HUMAN_APPROVAL_TOKEN and HARNESS_BRIDGE_ACCESS_TOKEN from the environment)',
    )
    .argument('<runId>')
    .requiredOption('--owner <owner>', 'approvalOwner of the pending approval')
    .requiredOption('--scope <scope>', 'approvalScope of the pending approval')
    .option('--grant', 'grant it')
    .option('--deny', 'deny it')
    .option('--reason <text>', 'message recorded with the decision')
    .option('--failure-reason <text>', 'with --deny: why the node fails (asked on a terminal when omitted)')
    .option('--recovery-path <text>', 'with --deny: what happens next (asked on a terminal when omitted)')
    .option('--node <nodeId>', 'only needed when several nodes wait for the same owner and scope')
    .option('--yes', 'do not ask for confirmation')
    .action(async (runId: string, opts: ApproveOptions) => {
      const io = {
        env: process.env,
        argv: process.argv.slice(2),
        stdin: process.stdin,
        stdout: process.stdout,
        stderr: process.stderr,
      };
      process.exitCode = await approve(runId, opts, io);
    });
}
