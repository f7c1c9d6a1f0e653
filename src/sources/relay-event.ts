import { randomUUID } from 'node:crypto';
import { Type } from '#typebox';
import { runEventProblems } from '../contract/event-problems.js';
import { BridgeError, RunEventSchema, TEventSource, TRunMode } from '../contract/index.js';

/**
 * What a page posts to the relay (its route schema): a RunEvent whose runMode and eventSource may
 * be left out (the relay sets them). Which values the relay takes is pageEvent's to say.
 */
export const PageEventSchema = Type.Object(
  {
    ...RunEventSchema.properties,
    runMode: Type.Optional(TRunMode),
    eventSource: Type.Optional(TEventSource),
  },
  { additionalProperties: false, $id: 'PageEvent', title: 'PageEvent' },
);

export type PageEvent = Record<string, unknown> & { id: string };

/**
 * Every id a page's event carries starts with this, the relay's own ones included: the agent's ids
 * never do, so a page can neither take an id the agent will use nor probe one it used.
 */
export const PAGE_ID_PREFIX = 'browser-';

/**
 * A page's body judged as the relay forwards it, or the refusal it gets, with every problem at once:
 * - a grant or deny is the human's, through the human token, which no page and no relay holds: 403;
 * - `actor: human` is refused (a page is never the human), as are a runMode other than `live`, an
 *   eventSource other than `browser-local`, the run's configuration fields, and an `id` that does
 *   not start with `browser-` (PAGE_ID_PREFIX);
 * - the rest is judged by the bridge's own rules (src/contract/event-problems.ts) on the event as it
 *   will be posted: runMode `live`, eventSource `browser-local`, and an `id` made here when absent,
 *   so that the outbox's redelivery of it is the same event and stored once. No `ts` is made: the
 *   bridge stamps one, and a repeat without `ts` matches the stored event whatever its stamp.
 */
export function pageEvent(body: unknown, schemaProblems: readonly string[]): PageEvent | BridgeError {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return new BridgeError('event_contract_violation', 'the body is not one event', ['/ must be an object']);
  const page = body as Record<string, unknown>;
  if (page['type'] === 'approval.granted' || page['type'] === 'approval.denied')
    return new BridgeError(
      'human_approval_required',
      `${String(page['type'])} is the human's, with the human token: a page never posts it`,
    );
  const problems = new Set(schemaProblems);
  if (page['actor'] === 'human') problems.add('actor human is refused: a page is never the human');
  if ('runMode' in page && page['runMode'] !== 'live')
    problems.add('runMode must be live (or left out): the relay posts to a live run');
  if ('eventSource' in page && page['eventSource'] !== 'browser-local')
    problems.add('eventSource must be browser-local (or left out)');
  for (const name of ['artifactRoot', 'adapterPath'])
    if (name in page) problems.add(`${name} is refused: a page never configures the run`);
  if (typeof page['id'] === 'string' && !page['id'].startsWith(PAGE_ID_PREFIX))
    problems.add(`/id must start with ${PAGE_ID_PREFIX} (or be left out): the agent's ids are not a page's`);
  const event: PageEvent = {
    ...page,
    id: typeof page['id'] === 'string' ? page['id'] : `${PAGE_ID_PREFIX}${randomUUID()}`,
    runMode: 'live',
    eventSource: 'browser-local',
  };
  for (const p of runEventProblems(event)) problems.add(p);
  if (problems.size > 0)
    return new BridgeError('event_contract_violation', 'the event breaks the contract', [...problems]);
  return event;
}
