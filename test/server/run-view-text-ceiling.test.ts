import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import type { TSchema } from '#typebox';
import { Compile } from '#typebox/compile';
import {
  ADAPTER_ARTIFACT_PATHS_MAX_BYTES,
  CONFIG_MAX_BYTES,
  CREATE_RUN_MAX_BYTES,
  DEFAULT_ARTIFACT_BY_NODE,
  EVENT_MAX_BYTES,
  NODE_IDS,
  PROBLEMS_MAX_BYTES,
  RESPONSE_MAX_BYTES,
  RUNS_LIMIT,
  SELF_HEAL_PROPOSAL_PATH,
  TEXT_FIELD_MAX,
  VIEW_APPROVALS_MAX_BYTES,
  VIEW_PROBLEMS_MAX_BYTES,
  VIEW_STEPS_MAX_BYTES,
  VIEW_TEXTS_MAX_BYTES,
} from '../../src/contract/index.js';
import { EventAccepted } from '../../src/server/routes/events.js';
import { CreatedRun, RunRead, RunsPage } from '../../src/server/routes/runs.js';
import { boundTexts, jsonStringBytes, shortenedText, type TextHolder } from '../../src/server/view-bounds.js';
import { cleanup, ev, startTestBridge, type TestBridge } from '../helpers/bridge.js';

/**
 * CONTRACT 4: responses stay under 1 MiB. Each node of a run view can hold a skip reason beside a
 * later failure's reason and recovery path (two events, up to 16 KiB each), and each of up to 15
 * artifact records a failure's texts (one more event each): some 700 KiB that no event page can
 * make room for. The view shortens them together to VIEW_TEXTS_MAX_BYTES. Here every text that can
 * reach a view is at its limit, and every answer that carries the run is under 1 MiB and matches
 * its route's schema.
 */

const bytes = (body: unknown) => Buffer.byteLength(JSON.stringify(body));

/**
 * The largest run view, summed part by part from the ceilings (docs/api.md "Response ceiling").
 * What the view copies from the config (title and metadata, artifact paths in nodes and in artifact
 * records, trust pin, adapter digest) appears at most twice, and the config is at most
 * CONFIG_MAX_BYTES of the same JSON. Fixed-size figures are generous: a node's members without its
 * texts and path take under 200 bytes, an artifact record's under 400 (its `ts` is at most 64).
 */
const RUN_VIEW_MAX_BYTES =
  2 * CONFIG_MAX_BYTES +
  1024 + // the summary without its title: ID (128), two timestamps (64 each), names and counts
  NODE_IDS.length * 256 +
  (NODE_IDS.length + 1) * 512 +
  VIEW_TEXTS_MAX_BYTES +
  VIEW_APPROVALS_MAX_BYTES +
  (VIEW_PROBLEMS_MAX_BYTES + 64) + // the problems and their `N more problems not shown`
  VIEW_STEPS_MAX_BYTES + // their next steps, the first that fit
  (PROBLEMS_MAX_BYTES + 128) + // quarantine reasons, their last line and `since`
  (EVENT_MAX_BYTES + 256) + // selfHeal: the PR URL is one event's text
  // approvalDrift: per node at most its artifact and a self-heal proposal, each under 320 bytes
  // beside a path of the adapter's (ADAPTER_ARTIFACT_PATHS_MAX_BYTES together).
  NODE_IDS.length * 2 * 320 +
  ADAPTER_ARTIFACT_PATHS_MAX_BYTES +
  1024; // member names and punctuation of the rest

/**
 * The largest title, in JSON: at most TEXT_FIELD_MAX characters decoded from a create body of at
 * most CREATE_RUN_MAX_BYTES. A character takes at most 6 bytes of JSON (`\u0001`), and only when
 * the body spelt it with 6 (an escape); any other takes at most 2 bytes more than the body spent on
 * it, and only a 1-byte one (an invalid byte decodes to U+FFFD, 3 bytes). So JSON <= body + 2 *
 * (1-byte characters); with x escapes and y 1-byte characters, 6x + y <= B and x + y <= N give at
 * most (3B + 12N) / 5.
 */
const TITLE_JSON_MAX = 2 + Math.floor((3 * CREATE_RUN_MAX_BYTES + 12 * TEXT_FIELD_MAX) / 5);
const RUN_SUMMARY_MAX_BYTES = TITLE_JSON_MAX + 1024;

t.test('the analytic bounds leave room under 1 MiB', async (t) => {
  t.ok(
    RUN_VIEW_MAX_BYTES + EVENT_MAX_BYTES + 4096 + 1024 < RESPONSE_MAX_BYTES,
    `a run view (at most ${RUN_VIEW_MAX_BYTES} bytes) and one full event fit`,
  );
  t.ok(
    RUNS_LIMIT.max * (RUN_SUMMARY_MAX_BYTES + 1) + 64 < RESPONSE_MAX_BYTES,
    `${RUNS_LIMIT.max} summaries of at most ${RUN_SUMMARY_MAX_BYTES} bytes fit`,
  );
  // An event's 201 answer: the event view (its canonical JSON, the seq, a claim) and a summary.
  t.ok(EVENT_MAX_BYTES + 1024 + RUN_SUMMARY_MAX_BYTES < RESPONSE_MAX_BYTES);
});

t.test('jsonStringBytes counts what JSON.stringify writes', async (t) => {
  const hostile = [
    '',
    'a"b\\c',
    '\u0001\b\t\n\f\r\u001f',
    'é€😀',
    '\ud800x\udc00',
    '😀'.slice(0, 1),
    '\u2028',
  ];
  // By index: a raw U+2028 in an assertion name would end the TAP line.
  for (const [i, s] of hostile.entries()) t.equal(jsonStringBytes(s), bytes(s), `string ${i}`);
});

t.test('shortenedText fits its cap, keeps whole code points and says how much is cut', async (t) => {
  for (const text of ['x'.repeat(4096), '\u0001'.repeat(2700), '😀'.repeat(3000), 'é😀\u0001'.repeat(900)]) {
    for (const cap of [64, 1000, 3013]) {
      const cut = shortenedText(text, cap);
      t.ok(bytes(cut) <= cap, `${bytes(cut)} <= ${cap}`);
      const m = /^([\s\S]*)… \[(\d+) more bytes not shown\]$/.exec(cut);
      t.ok(m, 'ends with the marker');
      const kept = m?.[1] ?? '';
      t.ok(text.startsWith(kept), 'a start of the text');
      t.notOk(/[\ud800-\udbff]$/.test(kept), 'no surrogate pair split');
      t.equal(Number(m?.[2]), Buffer.byteLength(text) - Buffer.byteLength(kept));
      t.ok(bytes(cut) > cap - 8, 'no more is cut than the cap needs');
    }
  }
});

t.test('boundTexts keeps texts that fit and cuts the longest alike', async (t) => {
  const holder = (s: string | null, f: string | null, r: string | null): TextHolder => ({
    skipReason: s,
    failureReason: f,
    recoveryPath: r,
  });
  const small = [holder('a'.repeat(100), null, null), holder(null, 'b'.repeat(200), 'c'.repeat(300))];
  const copy = structuredClone(small);
  t.equal(boundTexts(small, 1000), 0, 'within the budget nothing is cut');
  t.same(small, copy);

  const long = [
    holder('s'.repeat(50), 'f'.repeat(4000), 'r'.repeat(3000)),
    holder(null, 'g'.repeat(600), null),
  ];
  t.equal(boundTexts(long, 2000), 2, 'the two longest are cut');
  const [a, b] = long;
  t.equal(a?.skipReason, 's'.repeat(50), 'a short text stays whole');
  t.equal(b?.failureReason, 'g'.repeat(600), 'and so does one shorter than the cap');
  const total = long
    .flatMap((h) => [h.skipReason, h.failureReason, h.recoveryPath])
    .filter((x) => x !== null);
  t.ok(total.reduce((n, s) => n + bytes(s), 0) <= 2000, 'together within the budget');
  t.equal(bytes(a?.failureReason), bytes(a?.recoveryPath), 'the cut ones share one cap');
});

t.test(
  'boundTexts: a budget met to the byte cuts nothing; past it, the cap is the largest that fits',
  async (t) => {
    const holder = (skip: string, failure: string): TextHolder => ({
      skipReason: skip,
      failureReason: failure,
      recoveryPath: null,
    });
    const [short, long] = ['s'.repeat(98), 'f'.repeat(298)]; // 100 and 300 bytes of JSON
    const exact = [holder(short, long)];
    t.equal(boundTexts(exact, 400), 0, 'exactly the budget: nothing is cut');
    t.same(exact, [holder(short, long)]);
    // 201 bytes: the short text keeps its 100, which leaves 101 for the long one, not an even 100.
    const over = [holder(short, long)];
    t.equal(boundTexts(over, 201), 1);
    t.same(over, [holder(short, shortenedText(long, 101))], 'the long text is cut to the 101 bytes left');
    // 200 bytes: the cap is 100, and the short text, exactly as long, stays whole.
    const even = [holder(short, long)];
    t.equal(boundTexts(even, 200), 1);
    t.same(even, [holder(short, shortenedText(long, 100))], 'a text as long as the cap is not cut');
  },
);

function conforms(t: Test, schema: TSchema, body: unknown, what: string): void {
  const check = Compile(schema);
  const errors = check.Check(body) ? [] : [...check.Errors(body)].slice(0, 5);
  t.same(errors, [], `${what} matches its route's response schema`);
  t.ok(bytes(body) < RESPONSE_MAX_BYTES, `${what}: ${bytes(body)} bytes, under 1 MiB`);
}

/** A control character: one byte of UTF-8, six of JSON (`\u0001`). */
const C = '\u0001';
let eventNo = 0;

/** `over` with each of `fields` filled with control characters up to the 16 KiB event ceiling. */
function atLimit(over: Record<string, unknown>, fields: string[], prefix = ''): Record<string, unknown> {
  const base = ev({ id: `e${eventNo++}`, ts: new Date().toISOString(), ...over });
  for (const f of fields) base[f] = prefix;
  const each = Math.floor((EVENT_MAX_BYTES - bytes(base)) / 6 / fields.length);
  for (const f of fields) base[f] = prefix + C.repeat(Math.min(each, TEXT_FIELD_MAX - prefix.length));
  return base;
}

/**
 * POST /runs with the largest title a body can carry: escapes and invalid bytes (each decoded to
 * U+FFFD) in the mix TITLE_JSON_MAX describes.
 */
async function createWithLongestTitle(b: TestBridge, id: string, artifactRoot?: string) {
  const head = Buffer.from(
    `{"id":${JSON.stringify(id)},${artifactRoot ? `"artifactRoot":${JSON.stringify(artifactRoot)},` : ''}"title":"`,
  );
  const free = CREATE_RUN_MAX_BYTES - head.length - 2;
  const escapes = Math.floor((free - TEXT_FIELD_MAX) / 5);
  const invalid = Math.min(TEXT_FIELD_MAX - escapes, free - 6 * escapes);
  const body = Buffer.concat([
    head,
    Buffer.from('\\u0001'.repeat(escapes)),
    Buffer.alloc(invalid, 0xff),
    Buffer.from('"}'),
  ]);
  const res = await fetch(`${b.url}/runs`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-harness-bridge-token': b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN'] ?? '',
    },
    body,
  });
  return { status: res.status, body: JSON.parse(await res.text()) as Record<string, any> };
}

t.test('every answer carrying a run whose texts are all at their limits stays under 1 MiB', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const RUN = 'worst';
  const root = b.t.artifactRoot;
  const created = await createWithLongestTitle(b, RUN, root);
  t.equal(created.status, 201);
  conforms(t, CreatedRun, created.body, 'POST /runs 201');
  t.ok(bytes(created.body['run'].title) > TITLE_JSON_MAX - 64, 'the title is as long as a body allows');

  const post = async (event: Record<string, unknown>, what: string) => {
    const r = await b.req('POST', `/runs/${RUN}/events`, event);
    t.equal(r.status, 201, what);
    if (r.status === 201) t.ok(bytes(r.body) < 64 * 1024, `${what}: the 201 answer carries no node texts`);
    return r;
  };
  // Approvals: past their 256 KiB share, and a preview problem quoting each pending one.
  for (let i = 0; i < 20; i++) {
    const request = atLimit(
      { type: 'approval.requested', nodeId: 'redzone', status: 'needs_approval' },
      ['approvalOwner', 'approvalScope'],
      `o${i}`,
    );
    conforms(t, EventAccepted, (await post(request, `approval ${i}`)).body, 'POST /runs/:id/events 201');
  }
  const failures = new Map<string, Record<string, unknown>>();
  for (const nodeId of NODE_IDS) {
    const path = DEFAULT_ARTIFACT_BY_NODE[nodeId];
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), '{}');
    await post(
      atLimit({ type: 'node.skipped', nodeId, status: 'skipped' }, ['skipReason']),
      `${nodeId} skipped`,
    );
    const failure = ['failureReason', 'recoveryPath'];
    const failed = atLimit({ type: 'node.failed', nodeId, status: 'failed' }, failure);
    failures.set(nodeId, failed);
    await post(failed, `${nodeId} failed`);
    // Only the artifact record takes this failure: no nodeState, so the node keeps the one above.
    await post(
      atLimit({ type: 'artifact.written', nodeId, artifact: path, status: 'failed' }, failure),
      `${nodeId} artifact failed`,
    );
  }
  await mkdir(join(root, 'self_heal'), { recursive: true });
  await writeFile(join(root, SELF_HEAL_PROPOSAL_PATH), '{}');
  await post(
    atLimit(
      {
        type: 'self_heal.pr_proposed',
        nodeId: 'self-heal',
        artifact: SELF_HEAL_PROPOSAL_PATH,
        status: 'failed',
      },
      ['failureReason', 'recoveryPath'],
    ),
    'the 15th artifact record',
  );
  const url = 'https://example.com/o/r/pull/1?';
  await post(
    atLimit({ type: 'self_heal.pr_opened', nodeId: 'self-heal' }, ['selfHealPrUrl'], url),
    'a PR URL at its limit',
  );

  const got = await b.req('GET', `/runs/${RUN}`);
  t.equal(got.status, 200);
  conforms(t, RunRead, got.body, 'GET /runs/:id');
  const run = got.body['run'];
  t.ok(run.textsShortened > 0, `${run.textsShortened} texts are shortened`);
  t.ok(run.eventPage.returned > 0, 'room is left for events');
  t.equal(run.eventPage.byteLimited, true, 'the page is what is cut to fit');
  t.ok(run.approvalsOmitted > 0, 'the approvals are past their share');
  const texts = [...run.nodes, ...run.artifacts].flatMap((h: TextHolder) => [
    h.skipReason,
    h.failureReason,
    h.recoveryPath,
  ]);
  const shown = texts.filter((x): x is string => x !== null);
  t.ok(shown.reduce((n, s) => n + bytes(s), 0) <= VIEW_TEXTS_MAX_BYTES, 'the texts share 256 KiB');
  t.equal(
    shown.filter((s) => / \[\d+ more bytes not shown\]$/.test(s)).length,
    run.textsShortened,
    'every shortened text says so',
  );
  t.equal(run.selfHeal.prUrl.startsWith(url), true, 'the PR URL is never cut');

  // The journal keeps each text whole: the event that set it answers with it in full.
  const intake = run.nodes.find((n: { id: string }) => n.id === 'intake');
  const page = await b.req('GET', `/runs/${RUN}?eventCursor=${intake.updatedSeq}&eventLimit=1`);
  const whole = page.body['run'].events[0];
  t.equal(whole.failureReason, failures.get('intake')?.['failureReason'], 'the event holds the text whole');
  t.not(intake.failureReason, whole.failureReason, 'the view shortened it');

  const repeat = await b.req('POST', '/runs', { id: RUN });
  t.equal(repeat.status, 200);
  conforms(t, CreatedRun, repeat.body, 'POST /runs 200');
  const view = repeat.body['run'];
  t.same(view.nodes, run.nodes, 'POST /runs shows the same shortened texts');
  // Only the view's copies are shortened: the run's own artifact records keep their texts whole.
  t.same(view.artifacts, run.artifacts, 'and the same artifact records');
  t.equal(view.textsShortened, run.textsShortened, 'as many texts shortened the second time');
  t.ok(bytes(view) <= RUN_VIEW_MAX_BYTES, `the view, ${bytes(view)} bytes, is within the analytic bound`);

  // A full GET /runs page of the longest titles (the worst run among them).
  for (let i = 1; i < RUNS_LIMIT.max; i++) t.equal((await createWithLongestTitle(b, `t${i}`)).status, 201);
  const list = await b.req('GET', `/runs?limit=${RUNS_LIMIT.max}`);
  t.equal(list.body['runs'].length, RUNS_LIMIT.max);
  conforms(t, RunsPage, list.body, 'GET /runs');
  for (const s of list.body['runs'])
    t.ok(bytes(s) <= RUN_SUMMARY_MAX_BYTES, `summary ${s.id} within the bound`);
});

t.test('a run whose texts fit shows them whole', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const reason = 'the build broke'.repeat(200);
  const r = await b.req(
    'POST',
    '/runs/small/events',
    ev({ type: 'node.failed', status: 'failed', failureReason: reason, recoveryPath: reason }),
  );
  t.equal(r.status, 201);
  const run = (await b.req('GET', '/runs/small')).body['run'];
  t.equal(run.textsShortened, 0);
  t.equal(run.nodes[0].failureReason, reason);
});
