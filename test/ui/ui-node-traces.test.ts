import t from 'tap';
import type { EventItem, NodeItem } from '../../src/ui/web/src/api.js';
import { emptyTraces, foldTraces, NODE_EVENTS_SHOWN, timeSpent } from '../../src/ui/web/src/node-traces.js';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const event = (seq: number, nodeId: string, second: number) =>
  ({ seq, nodeId, ts: at(second), type: 'gate.fired', status: 'ok', message: `e${seq}` }) as EventItem;
const node = (id: string, state: string, updatedSeq: number | null) =>
  ({ id, state, updatedSeq }) as NodeItem;

t.test('events are counted per node once each, the newest kept for the list', async (t) => {
  const traces = emptyTraces();
  const events = Array.from({ length: 45 }, (_, i) => event(i, i % 3 === 0 ? 'route' : 'intake', i));
  foldTraces(traces, events.slice(0, 10));
  foldTraces(traces, events.slice(5)); // a page that overlaps what was read adds nothing twice
  t.equal(traces.next, 45);
  t.equal(traces.first?.seq, 0, 'the run’s first event (a replay’s source is on it)');
  t.equal(traces.byNode.get('route')?.count, 15);
  t.equal(traces.byNode.get('intake')?.count, 30);
  const recent = traces.byNode.get('intake')?.recent.map((e) => e.seq) ?? [];
  t.equal(recent.length, NODE_EVENTS_SHOWN);
  t.same(recent.slice(-2), [43, 44], 'oldest first, ending with the newest');
  t.equal(traces.byNode.get('intake')?.firstTs, at(1));
});

t.test('time spent runs from the first event to the one that settled the node, or to now', async (t) => {
  const traces = emptyTraces();
  // intake: entered at 0, passed by event 2 at 5 s, then one more event at 50 s after passing.
  foldTraces(traces, [
    event(0, 'intake', 0),
    event(1, 'route', 2),
    event(2, 'intake', 5),
    event(3, 'intake', 50),
  ]);
  const intake = traces.byNode.get('intake');
  t.same(timeSpent(node('intake', 'passed', 2), intake, Date.parse(at(100))), { ms: 5000, open: false });
  t.same(timeSpent(node('intake', 'failed', 2), intake, 0), { ms: 5000, open: false }, 'failed alike');
  t.same(timeSpent(node('intake', 'skipped', 2), intake, 0), { ms: 5000, open: false }, 'skipped alike');
  t.same(
    timeSpent(node('route', 'active', 1), traces.byNode.get('route'), Date.parse(at(62))),
    { ms: 60_000, open: true },
    'an open node: until now',
  );
  t.equal(timeSpent(node('prove', 'pending', null), undefined, 0), null, 'no events: no time');
  t.equal(
    timeSpent(node('intake', 'passed', 9), intake, 0),
    null,
    'the settling event not read yet: no time rather than a wrong one',
  );
});
