import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import {
  type CommissionedRun,
  commissionedRun,
  driveToCompletion,
  expectQuarantined,
} from './helpers/commissioned-run.js';
import { complete, expectBlocked } from './helpers/complete-run.js';

/**
 * Issue 29 item 4: a completed run survives further work in its repository. The completion gate
 * holds the working tree to the proven commit (post-proof mutation refuses the completion), but a
 * completed run's reads check what the completion bound (artifact bytes, signatures, approvals,
 * runtime identity, the named commits still existing), never the working tree against the proof:
 * a commit, an edited tracked file, a new file or a rewritten dependency leave it completed, while
 * a commit its evidence names that no longer exists quarantines it.
 */
const DEP = 'node_modules/dep/index.js';

async function withDependency(f: CommissionedRun['f']) {
  await mkdir(join(f.repo, DEP, '..'), { recursive: true });
  await writeFile(join(f.repo, DEP), 'module.exports = 1;\n');
}

const status = async (c: CommissionedRun) => (await c.b.req('GET', `/runs/${c.f.runId}`)).body.run.status;
const cache = async (c: CommissionedRun) => (await c.b.req('GET', '/health')).body.cache;

/** Drives the run to completion; an edit of app.js refuses it at the gate, reverted it completes. */
async function completedAfterRefusal(t: Test, c: CommissionedRun) {
  await driveToCompletion(c);
  await appendFile(join(c.f.repo, 'app.js'), '// edited after the proof\n');
  const { r } = await expectBlocked(t, c.b, c.f.runId, 1);
  t.same(r.body.problems, [`post-proof-mutation: application changed after proof at ${c.head}: app.js`]);
  await c.f.git('checkout', '--', 'app.js');
  const done = await complete(c.b, c.f.runId);
  t.equal(done.status, 201, JSON.stringify(done.body));
  t.equal(await status(c), 'completed');
}

t.test('commits and edits after completion leave the run completed', async (t) => {
  const c = await commissionedRun(t, { beforeProof: withDependency });
  await completedAfterRefusal(t, c);
  const before = await cache(c);

  // Further work: a new commit of application code, then an uncommitted edit, an untracked file
  // and a rewritten ignored dependency.
  await appendFile(join(c.f.repo, 'app.js'), 'export const sub = (a, b) => a - b;\n');
  await c.f.git('commit', '-q', '-m', 'further work', '--', 'app.js');
  await appendFile(join(c.f.repo, 'app.js'), '// work in progress\n');
  await writeFile(join(c.f.repo, 'notes.js'), 'export const n = 1;\n');
  await writeFile(join(c.f.repo, DEP), 'module.exports = 2;\n');

  t.equal(await status(c), 'completed', 'the read after the work answers completed');
  const hit = await cache(c);
  t.same(
    hit,
    { executions: before.executions, hits: before.hits + 1 },
    'the verdict cache binds no work tree',
  );
  // Uncached, the validators themselves do not compare the working tree at a read.
  c.b.ctx.verdicts.clear();
  t.equal(await status(c), 'completed', 'an uncached read answers completed');
  t.equal((await cache(c)).executions, hit.executions + 1, 'the validators ran');
});

t.test('a commit the evidence names that no longer exists quarantines the run', async (t) => {
  const c = await commissionedRun(t);
  await completedAfterRefusal(t, c);
  // History rewritten: the proven commit is replaced by one with the same tree (so the committed
  // trust store is unchanged), and the old one is pruned.
  await c.f.git('commit', '-q', '--amend', '-m', 'enrol reviewer (rewritten)');
  await c.f.git('reflog', 'expire', '--expire=now', '--all');
  await c.f.git('gc', '-q', '--prune=now');
  await t.rejects(c.f.git('cat-file', '-e', `${c.head}^{commit}`), 'the proven commit is gone');
  const body = await expectQuarantined(
    t,
    c,
    new RegExp(`^post-proof-mutation: proven commit ${c.head} no longer exists in the repository$`),
  );
  t.ok(
    body.run.quarantine.reasons.includes(
      `corrective-work: post-fix commit ${c.head} does not exist in the repository`,
    ),
    JSON.stringify(body.run.quarantine.reasons),
  );
});
