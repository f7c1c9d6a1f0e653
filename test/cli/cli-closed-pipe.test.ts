import { spawn } from 'node:child_process';
import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { CLI } from '../helpers/paths.js';

/**
 * A CLI whose reader closed the pipe (`harness explain r | head -1`) drops the rest of its output
 * and exits with its own code (CONTRACT 8), instead of crashing on EPIPE with a stack trace.
 * The read end is closed before the command writes anything, so every write meets a closed pipe.
 */

function runWithClosedStdout(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

t.test('explain and emit keep their exit codes when stdout is a closed pipe', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/r1/events', ev())).status, 201);
  const env = {
    PATH: process.env['PATH'] ?? '',
    HOME: b.t.dir,
    HARNESS_BRIDGE_URL: b.url,
    HARNESS_BRIDGE_ACCESS_TOKEN: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
  };
  const explain = await runWithClosedStdout(['explain', 'r1'], env);
  t.equal(explain.code, 1, 'explain: the run cannot complete yet (the check failed)');
  t.equal(explain.stderr, '', 'no EPIPE crash on stderr');

  const emit = await runWithClosedStdout(['emit', 'r1', 'gate.fired', 'intake', 'checked'], env);
  t.equal(emit.code, 0, 'emit: the event was accepted');
  t.equal(emit.stderr, '');
  const run = (await b.req('GET', '/runs/r1')).body['run'];
  t.equal(run.eventCount, 2, 'the emitted event was stored');
});
