import canonicalize from 'canonicalize';
import fc from 'fast-check';
import t from 'tap';
import { canonicalJson } from '../../src/storage/canonical.js';
import { recordMac, sealRecord, verifyLine } from '../../src/storage/journal-record.js';

/** The outcome of a canonicalizer: its text, or the message it throws. */
function outcome(
  f: (v: unknown) => string | undefined,
  v: unknown,
): { text?: string | undefined; error?: string } {
  try {
    return { text: f(v) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const same = (v: unknown) =>
  JSON.stringify(outcome(canonicalJson, v)) === JSON.stringify(outcome(canonicalize, v));

t.test('the fast path is byte-for-byte the canonicalize package on JSON data', async (t) => {
  t.doesNotThrow(() => fc.assert(fc.property(fc.jsonValue(), same), { numRuns: 3000 }));
  // Every UTF-16 code unit, lone surrogates included, in keys and values.
  const unit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
  const text = fc.oneof(fc.string({ unit }), fc.string({ unit: 'binary' }), fc.string());
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(text, text, (a, b) => same(a) && same({ v: [a, { b }] }) && same({ [a]: 1, [b]: [2] })),
      { numRuns: 3000 },
    ),
  );
});

t.test('values outside plain JSON get exactly the package result or error', async (t) => {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic['self'] = cyclic;
  let deep: unknown = 'x';
  for (let i = 0; i < 300; i++) deep = { d: [deep] };
  const cases: unknown[] = [
    undefined,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    { n: Number.NEGATIVE_INFINITY },
    -0,
    1e21,
    5e-324,
    'lone \uD800 high',
    'lone \uDC00 low',
    { '\uD83D\uDE00': 'pair \uD83D\uDE00' },
    [1, undefined, Symbol('s'), null],
    { skip: undefined, sym: Symbol('s'), keep: 1 },
    // biome-ignore lint/suspicious/noSparseArray: a hole is the case under test
    [1, , 3],
    new Date(0),
    { when: new Date(0), buf: Buffer.from('ab') },
    { toJSON: () => ({ z: 1, a: 2 }) },
    { f: () => 1 },
    cyclic,
    deep,
    { b: 1, a: 2, B: 3, é: 4, '10': 5, '9': 6, '': 7, '-1': 8, '1a': 9 },
    JSON.parse('{"__proto__":{"a":1},"b":2}'),
    'tab\there, nul \u0000, bell \u0007',
    'a backslash \\u0041 that is text',
    { 'key\u0001': 1, 'line\u2028sep': 'x\u2029' },
  ];
  for (const v of cases) t.same(outcome(canonicalJson, v), outcome(canonicalize, v));
  t.ok(cases.every(same));
  t.throws(() => canonicalJson(10n));
  t.throws(() => canonicalize(10n));
});

t.test('a sealed journal record carries exactly recordMac and its line verifies', async (t) => {
  const key = Buffer.alloc(32, 9);
  const runId = 'run-A.b_c-1';
  const prev = 'ab'.repeat(32);
  const unit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
  const text = fc.oneof(fc.string({ unit }), fc.string());
  const event = fc.record({
    id: text,
    type: fc.constantFrom('node.entered', 'artifact.written'),
    message: text,
    extra: fc.dictionary(text, fc.jsonValue(), { maxKeys: 4 }),
  });
  const claim = fc.option(fc.record({ path: text, sha256: fc.constant('cd'.repeat(32)), bytes: fc.nat() }));
  const seal = fc.option(fc.record({ artifacts: fc.dictionary(text, text), adapterSha256: fc.option(text) }));
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(fc.nat(), event, claim, seal, (seq, e, c, s) => {
        const seal = () => sealRecord(key, runId, seq, prev, e as never, c as never, s as never);
        const expected = outcome((v) => recordMac(key, runId, v as never), {
          seq,
          prev,
          event: e,
          claim: c,
          seal: s,
        });
        const got = outcome(() => seal().mac, null);
        // Values without a canonical form (lone surrogates) are refused the same way by both.
        if (JSON.stringify(got) !== JSON.stringify(expected)) return false;
        if (got.error !== undefined) return true;
        const sealed = seal();
        if (!sealed.line.endsWith('\n')) return false;
        const r = verifyLine(key, runId, sealed.line.slice(0, -1), seq, prev);
        return canonicalJson(r.event) === canonicalJson(e);
      }),
      { numRuns: 2000 },
    ),
  );
});
