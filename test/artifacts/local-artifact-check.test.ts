import t, { type Test } from 'tap';
import { execa } from '#execa';
import { cleanup, ev, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { records, writeArtifact } from '../helpers/expect.js';
import { connectMcp } from '../helpers/mcp.js';
import { CLI } from '../helpers/paths.js';

/**
 * The bridge refuses a completion when an artifact or a document its gate reads carries a
 * credential value. `harness explain --artifact-root` and `harness.finish_line_check` hold the
 * access token, the credential an agent could leak, and say so first, in the bridge's words,
 * rather than "ready". Runs the built CLI.
 */
const LEAK = 'artifact run/packet.json contains a bridge credential value';

async function leakyRun(t: Test, runId: string): Promise<TestBridge> {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', `/runs/${runId}/events`, ev({ artifactRoot: b.t.artifactRoot }))).status, 201);
  return b;
}

const explain = (b: TestBridge, runId: string) =>
  execa(process.execPath, [CLI, 'explain', runId, '--artifact-root', b.t.artifactRoot], {
    reject: false,
    extendEnv: false,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: b.t.dir,
      HARNESS_BRIDGE_URL: b.url,
      HARNESS_BRIDGE_ACCESS_TOKEN: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN'] ?? '',
      HARNESS_REPO_ROOT: b.t.repo,
    },
  });

const completion = ev({ type: 'run.completed', nodeId: 'handoff', status: 'passed' });

t.test(
  'explain and finish_line_check report the access token in a document, as the bridge refuses it',
  async (t) => {
    const b = await leakyRun(t, 'leaky');
    await writeArtifact(b.t.artifactRoot, 'run/packet.json', JSON.stringify({ note: 'clean' }));
    const mcp = await connectMcp(t, b);
    const clean = await explain(b, 'leaky');
    t.notMatch(clean.stdout, LEAK, 'control: a clean packet is not reported');
    t.notOk(
      (await mcp.call('harness.finish_line_check', { runId: 'leaky', artifactRoot: b.t.artifactRoot })).body[
        'problems'
      ].includes(LEAK),
      'control: nor by the tool',
    );

    const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN'];
    await writeArtifact(b.t.artifactRoot, 'run/packet.json', JSON.stringify({ note: `token ${token}` }));
    const leaked = await explain(b, 'leaky');
    t.equal(leaked.exitCode, 1);
    t.match(leaked.stdout, `local: ${LEAK}`);
    t.notMatch(leaked.stdout + leaked.stderr, token!, 'the token itself is not printed');
    const checked = await mcp.call('harness.finish_line_check', {
      runId: 'leaky',
      artifactRoot: b.t.artifactRoot,
    });
    t.equal(checked.body['ready'], false);
    t.ok(checked.body['problems'].includes(LEAK), 'the tool reports it');

    const before = await b.journal('leaky');
    const refused = await b.req('POST', '/runs/leaky/events', completion);
    t.equal(refused.status, 409);
    t.ok(refused.body['problems'].includes(LEAK), 'the bridge refuses the completion in the same words');
    const after = await b.journal('leaky');
    t.ok(after.subarray(0, before.length).equals(before), 'earlier records untouched');
    t.same(
      records(after.subarray(before.length)).map((r) => r['event'].type),
      ['run.blocked'],
      'only the run.blocked that records the refusal is appended',
    );
  },
);
