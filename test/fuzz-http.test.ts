import fc from 'fast-check';
import t from 'tap';
import { EVENT_TYPES, NODE_IDS, RUN_ID_PATTERN } from '../src/contract/index.js';
import { isLoopbackHost } from '../src/contract/loopback.js';
import { cleanup, ev, startTestBridge } from './helpers/bridge.js';
import { raw } from './helpers/expect.js';

/**
 * Property tests against a live bridge: random bodies, headers, query strings and run IDs. Every
 * request that must be refused gets a 4xx with exactly the contract envelope, the seeded run's
 * journal never changes, no run appears, and the bridge keeps answering.
 */
const b = await startTestBridge();
t.teardown(() => cleanup(b));
const RUN = 'fz';
const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
const port = new URL(b.url).port;
let journal0: Buffer = Buffer.alloc(0);
let runs0: string | null = null;
t.before(async () => {
  if ((await b.req('POST', `/runs/${RUN}/events`, ev())).status !== 201)
    throw new Error('seed event refused');
  journal0 = await b.journal(RUN);
  runs0 = (await b.req('GET', '/runs')).headers.get('x-harness-page-total');
});
const NUM_RUNS = 100;

function isEnvelope(body: Record<string, any>): boolean {
  return (
    JSON.stringify(Object.keys(body).sort()) === '["error","message","ok","problems"]' &&
    body['ok'] === false &&
    typeof body['error'] === 'string' &&
    typeof body['message'] === 'string' &&
    Array.isArray(body['problems'])
  );
}

async function refused(
  status: number,
  body: Record<string, any>,
  text = JSON.stringify(body),
): Promise<boolean> {
  if (status < 400 || status > 499 || !isEnvelope(body)) {
    throw new Error(`not a contract refusal: ${status} ${text.slice(0, 300)}`);
  }
  return true;
}

const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
  raw(b.url, {
    method: 'POST',
    path: `/runs/${RUN}/events`,
    headers: { 'content-type': 'application/json', 'x-harness-bridge-token': token, ...headers },
    body,
  });

// ---- bodies -------------------------------------------------------------------------------

const KNOWN = new Set([
  'id',
  'type',
  'ts',
  'actor',
  'runMode',
  'eventSource',
  'nodeId',
  'nodeState',
  'artifact',
  'artifactRoot',
  'adapterPath',
  'message',
  'status',
  'skipReason',
  'failureReason',
  'recoveryPath',
  'approvalOwner',
  'approvalScope',
  'selfHealPrUrl',
]);
const REQUIRED = ['type', 'actor', 'runMode', 'eventSource', 'nodeId', 'message', 'status'] as const;

/** One change that certainly makes a valid event invalid. */
const breaking: fc.Arbitrary<(e: Record<string, unknown>) => void> = fc.oneof(
  fc.constantFrom(...REQUIRED).map((f) => (e: Record<string, unknown>) => {
    delete e[f];
  }),
  fc
    .tuple(
      fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !KNOWN.has(k) && k !== '__proto__'),
      fc.jsonValue(),
    )
    .map(([k, v]) => (e: Record<string, unknown>) => {
      e[k] = v;
    }),
  fc
    .string()
    .filter((s) => !(EVENT_TYPES as readonly string[]).includes(s))
    .map((s) => (e: Record<string, unknown>) => {
      e['type'] = s;
    }),
  fc
    .string()
    .filter((s) => !(NODE_IDS as readonly string[]).includes(s))
    .map((s) => (e: Record<string, unknown>) => {
      e['nodeId'] = s;
    }),
  fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string())).chain((v) =>
    fc.constantFrom(...REQUIRED).map((f) => (e: Record<string, unknown>) => {
      e[f] = v;
    }),
  ),
  fc.constantFrom('failed', 'skipped', 'needs_approval').map((s) => (e: Record<string, unknown>) => {
    e['status'] = s;
  }),
  fc.constantFrom('local-jsonl', 'static-blueprint', 'database').map((s) => (e: Record<string, unknown>) => {
    e['eventSource'] = s;
  }),
  fc
    .oneof(fc.constant(''), fc.string({ minLength: 513, maxLength: 600 }))
    .map((id) => (e: Record<string, unknown>) => {
      e['id'] = id;
    }),
  fc.string({ minLength: 4097, maxLength: 4200 }).map((m) => (e: Record<string, unknown>) => {
    e['message'] = m;
  }),
);

t.test('events with one or more breaking changes are refused', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(breaking, { minLength: 1, maxLength: 3 }), async (changes) => {
      const e = ev({ nodeId: 'implement' });
      for (const change of changes) change(e);
      const r = await post(JSON.stringify(e));
      return refused(r.status, r.body, r.text);
    }),
    { numRuns: NUM_RUNS * 2 },
  );
  t.ok((await b.journal(RUN)).equals(journal0), 'journal bytes unchanged');
});

t.test('arbitrary bytes, strings and JSON values as bodies are refused', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.uint8Array({ maxLength: 256 }).map((a) => Buffer.from(a)),
        fc.string({ maxLength: 256 }),
        fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'),
        fc
          .dictionary(fc.string({ maxLength: 10 }), fc.jsonValue(), { maxKeys: 8 })
          .map((d) => JSON.stringify(d)),
      ),
      async (body) => {
        const r = await post(body);
        return refused(r.status, r.body, r.text);
      },
    ),
    { numRuns: NUM_RUNS * 2 },
  );
  t.ok((await b.journal(RUN)).equals(journal0), 'journal bytes unchanged');
});

// ---- headers ------------------------------------------------------------------------------

const headerName = fc
  .stringMatching(/^[a-z][a-z0-9-]{0,15}$/)
  .filter(
    (n) => !['content-length', 'transfer-encoding', 'connection', 'expect', 'upgrade', 'host'].includes(n),
  );
const headerValue = fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,38}[\x21-\x7e])?$/);
const notLoopback = (h: string) => !isLoopbackHost(h.toLowerCase().replace(/^\[|\]$/g, ''));

/** One header change that must stop a valid write. */
const breakingHeader: fc.Arbitrary<Record<string, string>> = fc.oneof(
  fc
    .tuple(fc.domain().filter(notLoopback), fc.option(fc.integer({ min: 1, max: 65535 })))
    .map(([d, p]) => ({ host: p === null ? d : `${d}:${p}` })),
  fc
    .integer({ min: 1, max: 65535 })
    .filter((p) => String(p) !== port)
    .map((p) => ({ host: `127.0.0.1:${p}` })),
  fc
    .webUrl()
    .filter((u) => notLoopback(new URL(u).hostname))
    .map((origin) => ({ origin })),
  fc.constantFrom('null', 'file://', `ws://127.0.0.1:${port}`).map((origin) => ({ origin })),
  fc.stringMatching(/^[A-Za-z0-9_-]{0,60}$/).map((tok) => ({ 'x-harness-bridge-token': tok })),
  fc
    .stringMatching(/^[a-z]{1,10}\/[a-z0-9.+-]{1,20}$/)
    .filter((ct) => ct !== 'application/json')
    .map((ct) => ({ 'content-type': ct })),
);

t.test('random headers never let a write through', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      breakingHeader,
      fc.dictionary(headerName, headerValue, { maxKeys: 6 }),
      async (breaker, noise) => {
        const headers = { ...noise, ...breaker };
        // Noise must not repair what the breaker broke: keep only the breaker's value for its name.
        const r = await post(JSON.stringify(ev({ nodeId: 'implement' })), headers);
        return refused(r.status, r.body, r.text);
      },
    ),
    { numRuns: NUM_RUNS * 2 },
  );
  t.ok((await b.journal(RUN)).equals(journal0), 'journal bytes unchanged');
});

t.test('random headers on reads: a 200 or a contract refusal, nothing else', async () => {
  await fc.assert(
    fc.asyncProperty(fc.dictionary(headerName, headerValue, { maxKeys: 8 }), async (noise) => {
      const r = await raw(b.url, {
        path: `/runs/${RUN}`,
        headers: { ...noise, 'x-harness-bridge-token': token },
      });
      if (r.status === 200) return r.body['ok'] === true;
      return refused(r.status, r.body, r.text);
    }),
    { numRuns: NUM_RUNS },
  );
});

// ---- query strings ------------------------------------------------------------------------

type Spec = Record<string, { min: number; max: number }>;
const SAFE = Number.MAX_SAFE_INTEGER;
const RUNS_SPEC: Spec = { limit: { min: 1, max: 50 }, cursor: { min: 0, max: SAFE } };
const RUN_SPEC: Spec = { eventLimit: { min: 1, max: 200 }, eventCursor: { min: 0, max: SAFE } };

/** The contract's rule, stated independently of the implementation. */
function queryIsValid(parts: [string, string][], spec: Spec): boolean {
  const seen = new Set<string>();
  for (const [name, value] of parts) {
    const range = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!range || seen.has(name)) return false;
    seen.add(name);
    if (!/^\d+$/.test(value)) return false;
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < range.min || n > range.max) return false;
  }
  return true;
}

const queryParts = (names: string[]) =>
  fc.array(
    fc.tuple(
      fc.oneof(fc.constantFrom(...names), fc.string({ minLength: 1, maxLength: 8 })),
      fc.oneof(
        fc.integer({ min: 0, max: 300 }).map(String),
        fc.constantFrom(
          '',
          '-1',
          '1.5',
          '1e2',
          '0x10',
          '+1',
          ' 5',
          '99999999999',
          '007',
          '9007199254740991',
          '9007199254740992',
          '0000000000000000001',
        ),
        fc.string({ maxLength: 6 }),
      ),
    ),
    { maxLength: 4 },
  );

for (const [label, path, spec] of [
  ['GET /runs', '/runs', RUNS_SPEC],
  ['GET /runs/:id', `/runs/${RUN}`, RUN_SPEC],
] as const) {
  t.test(`${label}: random query strings follow the contract's rule exactly`, async (t) => {
    let refusals = 0;
    await fc.assert(
      fc.asyncProperty(queryParts(Object.keys(spec)), async (parts) => {
        const qs = parts.map(([n, v]) => `${encodeURIComponent(n)}=${encodeURIComponent(v)}`).join('&');
        const r = await raw(b.url, { path: `${path}?${qs}`, headers: { 'x-harness-bridge-token': token } });
        if (queryIsValid(parts, spec)) {
          if (r.status !== 200) throw new Error(`valid query ${qs} refused: ${r.text.slice(0, 200)}`);
          return true;
        }
        refusals++;
        if (r.body['error'] !== 'invalid_query')
          throw new Error(`?${qs}: ${r.status} ${r.text.slice(0, 200)}`);
        return refused(r.status, r.body, r.text);
      }),
      { numRuns: NUM_RUNS * 2 },
    );
    t.ok(refusals > 0, 'the generator produced invalid queries');
  });
}

// ---- run IDs ------------------------------------------------------------------------------

t.test('random run IDs: canonical ones are looked up, others refused as invalid_run_id', async (t) => {
  let seen = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.string({ minLength: 1, maxLength: 140 }),
        fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,130}$/),
      ),
      async (id) => {
        seen++;
        const r = await raw(b.url, {
          path: `/runs/${encodeURIComponent(id)}`,
          headers: { 'x-harness-bridge-token': token },
        });
        if (id === RUN) return r.status === 200;
        // `.` and `..` are resolved by nobody here (raw request), but routing may still see them as path segments.
        const expected = RUN_ID_PATTERN.test(id) ? 'run_not_found' : 'invalid_run_id';
        if (r.body['error'] !== expected && !(r.body['error'] === 'not_found' && /^\.\.?$/.test(id))) {
          throw new Error(`${JSON.stringify(id)}: ${r.status} ${r.text.slice(0, 200)}`);
        }
        return refused(r.status, r.body, r.text);
      },
    ),
    { numRuns: NUM_RUNS * 2 },
  );
  t.equal(seen, NUM_RUNS * 2, 'every generated case was sent');
});

t.test('after all of it: nothing stored, no run created, the bridge alive', async (t) => {
  t.ok((await b.journal(RUN)).equals(journal0), 'journal bytes unchanged');
  t.equal((await b.req('GET', '/runs')).headers.get('x-harness-page-total'), runs0, 'no run created');
  const h = await b.req('GET', '/health', undefined, {}, null);
  t.equal(h.status, 200);
  t.equal((await b.req('POST', `/runs/${RUN}/events`, ev())).status, 201, 'a valid write still works');
});
