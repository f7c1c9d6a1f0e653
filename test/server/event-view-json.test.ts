import fc from 'fast-check';
import t from 'tap';
import type { JournalEntry } from '../../src/contract/index.js';
import { eventView, eventViewJson } from '../../src/server/views.js';
import { canonicalJson } from '../../src/storage/canonical.js';
import { ev } from '../helpers/bridge.js';

/**
 * The 201 answer echoes the event from its stored canonical JSON instead of serializing a copy:
 * that text must parse to exactly `eventView`, absolute paths of a set-up event included (left out).
 */
t.test('eventViewJson parses to exactly eventView', async (t) => {
  const unit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
  const text = fc.oneof(fc.string({ unit }), fc.string({ minLength: 1 }));
  const event = fc.record(
    {
      id: text,
      type: fc.constantFrom('node.entered', 'artifact.written', 'run.completed'),
      ts: text,
      actor: fc.constantFrom('runtime-a', 'human'),
      runMode: fc.constantFrom('live', 'replay'),
      eventSource: fc.constantFrom('api', 'bridge'),
      nodeId: fc.constantFrom('intake', 'prove'),
      message: text,
      status: fc.constantFrom('ok', 'failed'),
      artifact: text,
      artifactRoot: text,
      adapterPath: text,
      failureReason: text,
    },
    { requiredKeys: ['id', 'type', 'ts', 'actor', 'runMode', 'eventSource', 'nodeId', 'message', 'status'] },
  );
  const claim = fc.option(
    fc.record({ path: text, sha256: fc.constant('cd'.repeat(32)), size: fc.nat(), mtimeMs: fc.nat() }),
  );
  let compared = 0;
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(fc.nat(), event, claim, (seq, e, c) => {
        let stored: string | undefined;
        try {
          stored = canonicalJson(e);
        } catch {
          return true; // no canonical form: such an event is refused before any append
        }
        if (stored === undefined) return true;
        const entry = { seq, event: e, claim: c, seal: null } as unknown as JournalEntry;
        compared++;
        const echoed = JSON.parse(eventViewJson(entry, stored)) as unknown;
        return JSON.stringify(sorted(echoed)) === JSON.stringify(sorted(eventView(entry)));
      }),
      { numRuns: 2000 },
    ),
  );
  t.ok(compared > 1000, `most cases compared (${compared})`);
});

t.test('an event that set up the run never echoes its absolute paths', async (t) => {
  const event = ev({
    id: 'e1',
    ts: '2026-01-01T00:00:00.000Z',
    artifactRoot: '/abs/root',
    adapterPath: '/abs/root/project-adapter.json',
  });
  const entry = { seq: 0, event, claim: null, seal: null } as unknown as JournalEntry;
  const text = eventViewJson(entry, canonicalJson(event)!);
  t.notMatch(text, /\/abs\/root/);
  t.same(JSON.parse(text), { ...eventView(entry) });
  t.equal(JSON.parse(text).artifactRootSet, true);
});

/** The same members in sorted order, so two views compare whatever order they were built in. */
function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
  );
}
