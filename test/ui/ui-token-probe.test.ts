import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import t from 'tap';
import { cleanup, startTestBridge } from '../helpers/bridge.js';
import { CLI } from '../helpers/paths.js';

/**
 * `harness ui` reads once from the bridge before it says it is listening: a token the bridge
 * refuses is named on stderr there, where the operator started it, instead of only in every page.
 */
const b = await startTestBridge();
t.teardown(() => cleanup(b));

/** Starts `harness ui` with `token`; returns its stderr up to the listening line. */
async function startUi(token: string): Promise<string> {
  const child = spawn(process.execPath, [CLI, 'ui'], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HARNESS_BRIDGE_URL: b.url,
      HARNESS_BRIDGE_ACCESS_TOKEN: token,
      HARNESS_UI_PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  try {
    for await (const line of createInterface({ input: child.stdout! }))
      if (line.startsWith('harness ui listening at')) return stderr;
    throw new Error(`harness ui exited: ${stderr}`);
  } finally {
    child.kill('SIGKILL');
  }
}

t.test('a token the bridge refuses is named at startup', async (t) => {
  const wrong = 'not-the-bridge-token-0123456789abcdef';
  const stderr = await startUi(wrong);
  t.match(
    stderr,
    /^harness ui: the bridge at http:\/\/127\.0\.0\.1:\d+ refuses this HARNESS_BRIDGE_ACCESS_TOKEN/,
  );
  t.notOk(stderr.includes(wrong), 'the token itself is not echoed');
});

t.test("the bridge's own token: nothing is said", async (t) => {
  t.equal(await startUi(b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!), '');
});
