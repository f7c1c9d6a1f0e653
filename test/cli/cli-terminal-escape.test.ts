import { execFile } from 'node:child_process';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { cleanup, ev, makeTestEnv, startTestBridge } from '../helpers/bridge.js';
import { CLI } from '../helpers/cli.js';

/**
 * An agent chooses the artifact root, the artifact paths (through an adapter's artifactByNode) and
 * adapter values: the CLI writes each of them to the operator's terminal with every control
 * character shown as a visible escape, so no escape sequence can clear the screen, retitle the
 * window or paint a fake "ok" line.
 */
const exec = promisify(execFile);
const ESC = '\u001b';

async function harness(env: Record<string, string>, ...args: string[]) {
  try {
    const r = await exec(process.execPath, [CLI, ...args], { env });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

t.test('harness verify escapes agent-chosen artifact roots and paths', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const evilRoot = join(b.t.dir, `root${ESC}[2J${ESC}[H${ESC}]0;owned\u0007`);
  await mkdir(join(evilRoot, 'run'), { recursive: true });
  const evilPath = `run/i${ESC}[32mok all runs intact${ESC}[0m\u009b.json`;
  await writeFile(
    join(evilRoot, 'project-adapter.json'),
    JSON.stringify({ runtime: { artifactByNode: { intake: evilPath } } }),
  );
  await writeFile(join(evilRoot, evilPath), '{}');
  const first = await b.req(
    'POST',
    '/runs/esc/events',
    ev({ type: 'artifact.written', artifact: evilPath, artifactRoot: evilRoot }),
  );
  t.equal(first.status, 201);
  await writeFile(join(evilRoot, evilPath), '{"changed":true}');
  await b.close();

  const drifted = await harness(b.t.env, 'verify', '--data-dir', b.t.dataDir);
  t.equal(drifted.code, 1, 'the drift is reported');
  t.notOk(
    /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(drifted.stdout),
    'no control character but newlines',
  );
  t.ok(drifted.stdout.includes('\\u{1b}[32mok all runs intact\\u{1b}[0m\\u{9b}.json'), 'the path, escaped');

  await rename(evilRoot, `${evilRoot}-gone`);
  const gone = await harness(b.t.env, 'verify', '--data-dir', b.t.dataDir);
  t.equal(gone.code, 1, 'the missing root is tampering');
  t.notOk(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(gone.stdout), 'no control character but newlines');
  t.ok(gone.stdout.includes('root\\u{1b}[2J\\u{1b}[H\\u{1b}]0;owned\\u{7}'), 'the root, escaped');
});

t.test('a failure naming an adapter value is escaped', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  await writeFile(
    join(te.artifactRoot, 'project-adapter.json'),
    JSON.stringify({ runtime: { requiredNodes: [`x${ESC}[2J${ESC}]0;owned\u0007`] } }),
  );
  const env = { ...te.env };
  delete env['HARNESS_BRIDGE_INTEGRITY_KEY'];
  const r = await harness(
    env,
    'run',
    'create',
    'esc',
    '--artifact-root',
    te.artifactRoot,
    '--print-evidence-bundle',
  );
  t.equal(r.code, 2, 'the adapter is refused');
  t.notOk(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(r.stderr), 'no control character but newlines');
  t.ok(r.stderr.includes('x\\u{1b}[2J\\u{1b}]0;owned\\u{7}'), 'the adapter value, escaped');
});
