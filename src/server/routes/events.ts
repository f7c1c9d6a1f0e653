import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '#typebox';
import {
  BridgeError,
  type ErrorCode,
  EVENT_MAX_BYTES,
  EventView,
  eventRuleProblems,
  eventTextProblems,
  type RunEvent,
  RunEventSchema,
  RunSummaryView,
} from '../../contract/index.js';
import type { BridgeContext } from '../context.js';
import { checkBodyForCredentials, checkRunIdForCredentials, secretMatches } from '../guard.js';
import { toBridgeError } from '../http-errors.js';
import { postEvent } from '../post-event.js';
import { bodyLimitDoc, errorResponses, GUARD_ERRORS, SECURITY, WRITE_ERRORS } from '../route-docs.js';
import { pathRunIdCheck, RunParams, secrets } from './runs.js';

/** The 2xx bodies of the event route (exported so a test holds real answers to them). */
export const EventAccepted = Type.Object({
  ok: Type.Literal(true),
  event: EventView,
  seq: Type.Integer(),
  run: RunSummaryView,
});
export const EventDuplicate = Type.Object({
  ok: Type.Literal(true),
  duplicate: Type.Literal(true),
  event: EventView,
  seq: Type.Integer(),
});

/**
 * The codes the route can answer with beyond its 2xx (route-docs.ts): the guard's and a write's,
 * the checks below, and postEvent's. Once a commit-log write or sync failed, the bridge is
 * stopping: an event it could not make durable is `bridge_busy`.
 */
const EVENT_ERRORS = [
  ...GUARD_ERRORS,
  ...WRITE_ERRORS,
  'client_supplied_human_token_rejected',
  'invalid_run_id',
  'event_contract_violation',
  'human_approval_required',
  'artifact_verification_failed',
  'adapter_policy_violation',
  'event_state_violation',
  'event_id_conflict',
  'finish_line_blocked',
  'run_closed',
  'run_quarantined',
  'run_history_full',
  'internal_error',
] as const satisfies readonly ErrorCode[];

/** Schema and rule problems together, so an agent learns everything wrong with an event at once. */
function contractProblems(req: FastifyRequest): string[] {
  const problems: string[] = [];
  if (req.validationError)
    problems.push(...toBridgeError(req.validationError as never, 'event_contract_violation').problems);
  problems.push(...eventTextProblems(req.body));
  try {
    problems.push(...eventRuleProblems(req.body as RunEvent));
  } catch {
    // the body is too malformed for the conditional rules; the schema problems already say why
  }
  return problems.length === 0 ? problems : [...new Set(problems)];
}

export function registerEventRoute(app: FastifyInstance, ctx: BridgeContext): void {
  const bodySecrets = secrets(ctx);
  const route = '/runs/:id/events';
  const checkPathRunId = pathRunIdCheck(route);
  app.post(
    route,
    {
      bodyLimit: EVENT_MAX_BYTES,
      attachValidation: true,
      schema: {
        summary: 'Append one RunEvent (grant/deny also need x-harness-human-token)',
        ...bodyLimitDoc(EVENT_MAX_BYTES),
        security: SECURITY.accessWithHuman,
        params: RunParams,
        body: RunEventSchema,
        response: { 201: EventAccepted, 200: EventDuplicate, ...errorResponses(EVENT_ERRORS) },
      },
    },
    async (req, reply) => {
      // Fastify keeps no start time without a logger or onResponse hook: the time is taken here,
      // once the body is parsed (microseconds for 16 KiB at most; the durable write dominates).
      const receivedAt = performance.now();
      // Before anything the body says is judged (schema problems included): a credential in the
      // run ID or the body is refused as such. The validation result is only attached, so doing
      // this here rather than in a preValidation hook saves a hook run per event.
      checkRunIdForCredentials((req.params as { id?: unknown }).id, bodySecrets);
      checkBodyForCredentials(req.body, bodySecrets);
      checkPathRunId(req);
      const problems = contractProblems(req);
      if (problems.length > 0)
        throw new BridgeError('event_contract_violation', 'the event violates the contract', problems);
      const event = req.body as RunEvent;
      const humanHeader = req.headers['x-harness-human-token'];
      if (event.type === 'approval.granted' || event.type === 'approval.denied') {
        if (!secretMatches(humanHeader, ctx.env.humanToken)) {
          throw new BridgeError(
            'human_approval_required',
            'approval decisions need a valid x-harness-human-token header',
          );
        }
      }
      const { id } = req.params as { id: string };
      // The run's slot is held while the event is decided and its record queued; the answer
      // waits for the record's fdatasync outside the slot, so queued events share one sync.
      const result = await ctx.queue.runThenSettle(id, async () => {
        const { result, durable } = await postEvent(
          ctx,
          id,
          event,
          typeof humanHeader === 'string' ? humanHeader : undefined,
        );
        return { value: result, settled: durable };
      });
      // Answered once durable: the agent's wait, less reading its body.
      ctx.metrics.eventAccepted(result.status === 200, (performance.now() - receivedAt) / 1000);
      void reply.code(result.status);
      // A body already serialized is sent as it is.
      if (typeof result.body === 'string') void reply.type('application/json; charset=utf-8');
      return result.body;
    },
  );
}
