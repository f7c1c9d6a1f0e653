import { Buffer } from 'node:buffer';
import t, { type Test } from 'tap';
import { EVENT_MAX_BYTES, TEXT_FIELD_MAX } from '../../src/contract/index.js';
import { canonicalBytes } from '../../src/storage/mac.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { expectRejected, records } from '../helpers/expect.js';

/**
 * CONTRACT 4: "Serialized event at most 16 KiB." The bound is on the event as stored (its
 * canonical JSON, with the id and ts the bridge fills in), not only on the request body: a compact
 * body just under 16 KiB grows past it once id and ts are added, and is refused with 413
 * payload_too_large and nothing stored. The raw-body limit still applies on its own.
 */
const ID = '00000000-0000-0000-0000-000000000000';
const TS = '2026-01-01T00:00:00.000Z';
const PAD_FIELDS = ['message', 'skipReason', 'failureReason', 'recoveryPath', 'approvalOwner'] as const;
const storedBytes = (e: Record<string, unknown>) =>
  Buffer.byteLength(JSON.stringify({ id: ID, ts: TS, ...e }));
/** What the bridge adds to a body without id and ts: `,"id":"…","ts":"…"` (76 bytes). */
const FILLED = storedBytes(ev()) - Buffer.byteLength(JSON.stringify(ev()));

/** A valid event (id and ts left to the bridge) whose stored form is `target` bytes, padded with `ch`. */
function eventStoredAs(target: number, ch: 'a' | 'é' | '€', over: Record<string, unknown> = {}) {
  const e: Record<string, unknown> = ev(over);
  for (const f of PAD_FIELDS) e[f] = f === 'message' ? 'm' : '';
  let need = target - storedBytes(e);
  const width = Buffer.byteLength(ch);
  const rest = need % width;
  if (rest !== 0) {
    e['message'] = 'm'.repeat(1 + rest); // the bytes wider padding cannot fill
    need -= rest;
  }
  for (const f of PAD_FIELDS) {
    const units = Math.min(Math.floor(need / width), TEXT_FIELD_MAX - String(e[f]).length);
    e[f] = String(e[f]) + ch.repeat(units);
    need -= units * width;
  }
  if (storedBytes(e) !== target) throw new Error(`sized ${storedBytes(e)}, wanted ${target}`);
  return e;
}

t.test('serialized event limit', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const RUN = 'sz';
  t.equal((await b.req('POST', `/runs/${RUN}/events`, ev())).status, 201);
  const post =
    (body: Record<string, unknown>, run = RUN) =>
    () =>
      b.req('POST', `/runs/${run}/events`, body);
  const refused = (t: Test, body: Record<string, unknown>, run = RUN) =>
    expectRejected(t, b, run, post(body, run), 413, 'payload_too_large');

  t.test('the audit case: a compact 16,382-byte body grows past 16 KiB once stored', async (t) => {
    const body = eventStoredAs(16_382 + FILLED, 'a');
    t.equal(Buffer.byteLength(JSON.stringify(body)), 16_382, 'the body itself is under the raw limit');
    await refused(t, body);
  });

  // '€' is three UTF-8 bytes in one UTF-16 unit, the most any unit takes: the stored size is
  // counted in bytes, however few characters the text has.
  for (const ch of ['a', 'é', '€'] as const) {
    t.test(`padded with ${ch}: exactly 16 KiB stored is accepted, one byte more is refused`, async (t) => {
      t.ok(
        Buffer.byteLength(JSON.stringify(eventStoredAs(EVENT_MAX_BYTES + 1, ch))) <= EVENT_MAX_BYTES,
        'the refused body fits the raw limit',
      );
      await refused(t, eventStoredAs(EVENT_MAX_BYTES + 1, ch));
      const r = await post(eventStoredAs(EVENT_MAX_BYTES, ch))();
      t.equal(r.status, 201, JSON.stringify(r.body).slice(0, 300));
      const stored = records(await b.journal(RUN)).at(-1)!.event;
      t.equal(Buffer.byteLength(canonicalBytes(stored)), EVENT_MAX_BYTES, 'stored at exactly the limit');
    });
  }

  t.test('a supplied id counts too', async (t) => {
    const body = eventStoredAs(EVENT_MAX_BYTES - 10, 'a');
    await refused(t, { ...body, id: 'x'.repeat(ID.length + 11) });
  });

  t.test('an oversized first event creates no run', async (t) => {
    await refused(t, eventStoredAs(EVENT_MAX_BYTES + 1, 'a'), 'sz-new');
    t.equal((await b.req('GET', '/runs/sz-new')).status, 404);
  });

  t.test('an oversized run.completed is refused before the gate: no run.blocked is left', async (t) => {
    const completion = eventStoredAs(EVENT_MAX_BYTES + 1, 'a', {
      type: 'run.completed',
      nodeId: 'handoff',
      status: 'passed',
    });
    await refused(t, completion);
    t.not((await b.req('GET', `/runs/${RUN}`)).body['run'].status, 'blocked');
  });
});
