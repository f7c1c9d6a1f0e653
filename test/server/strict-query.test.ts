import t from 'tap';
import { BridgeError } from '../../src/contract/index.js';
import { toBridgeError } from '../../src/server/http-errors.js';
import { strictQuery } from '../../src/server/query.js';

/**
 * The query and body-parse rules on their own, without the route schemas that also refuse much
 * of the same input over HTTP (query-strictness.test.ts and fuzz-http.test.ts cover the routes):
 * either layer alone must hold.
 */
const spec = { limit: { min: 1, max: 50 }, cursor: { min: 0, max: 1_000_000_000 } };

function problemsOf(url: string): readonly string[] {
  try {
    strictQuery(url, spec);
  } catch (err) {
    if (err instanceof BridgeError && err.code === 'invalid_query') return err.problems;
    throw err;
  }
  return [];
}

t.test('plain decimal digits in range are read', async (t) => {
  t.same(strictQuery('/runs?limit=5&cursor=0', spec), { limit: 5, cursor: 0 });
  t.same(strictQuery('/runs', spec), {});
  t.same(strictQuery('/runs?', spec), {});
});

t.test('a repeated name is refused, however it is spelled', async (t) => {
  for (const url of [
    '/runs?limit=5&limit=5',
    '/runs?limit=5&limit=6',
    '/runs?limit=5&%6Cimit=5',
    '/runs?cursor=1&limit=2&cursor=1',
  ]) {
    t.match(problemsOf(url), [/is repeated/], url);
  }
});

t.test('a value that is not plain decimal digits is refused', async (t) => {
  for (const v of [
    '',
    '+5',
    '-0',
    '5.0',
    '5e0',
    '0x5',
    ' 5',
    '5 ',
    '%205',
    '05a',
    '1_0',
    '٥',
    '1234567890',
  ]) {
    t.match(problemsOf(`/runs?limit=${v}`), [/must be an integer/], JSON.stringify(v));
  }
});

t.test('unknown names and values out of range are refused', async (t) => {
  t.match(problemsOf('/runs?offset=1'), [/unknown query parameter/]);
  for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty'])
    t.match(problemsOf(`/runs?${name}=1`), [/unknown query parameter/], `${name}: not the spec's own`);
  for (const part of ['%ZZ=1', 'limit=%', 'limit=%E0%A4%A', '%=1'])
    t.match(problemsOf(`/runs?${part}`), [/not valid percent-encoding/], part);
  t.match(problemsOf('/runs?limit=0'), [/must be an integer from 1 to 50/]);
  t.match(problemsOf('/runs?limit=51'), [/must be an integer from 1 to 50/]);
});

t.test('a body that is not JSON is invalid_json, and its text is never echoed', async (t) => {
  const secret = 'do-not-echo-this-body-text';
  const errors = [
    Object.assign(new SyntaxError(`Unexpected token d in JSON at position 0: ${secret}`), {
      statusCode: 400,
      code: 'FST_ERR_CTP_INVALID_JSON_BODY',
    }),
    Object.assign(new SyntaxError(`Unexpected token in JSON: ${secret}`), { statusCode: 400 }),
  ];
  for (const err of errors) {
    const e = toBridgeError(err as never, 'event_contract_violation');
    t.equal(e.code, 'invalid_json');
    t.notOk(JSON.stringify({ message: e.message, problems: e.problems }).includes(secret), 'nothing echoed');
    t.same(e.problems, []);
  }
});
