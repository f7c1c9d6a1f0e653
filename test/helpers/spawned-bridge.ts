import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { TestEnv } from './bridge.js';
import { CLI } from './cli.js';

/**
 * `harness bridge` as its own process (env from the test env), as an operator runs it: for attacks
 * on the bridge process itself (its /proc/<pid>/environ holds the credentials), or as another user
 * (`as`, which needs root), or under Node options (`node`, a heap limit say). Stopped in teardown.
 */
export async function spawnBridge(
  t: { teardown(fn: () => unknown): void },
  te: TestEnv,
  { node = [], ...as }: { uid?: number; gid?: number; node?: string[] } = {},
) {
  const child = spawn(process.execPath, [...node, CLI, 'bridge'], {
    env: te.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...as,
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  // Waited for, so that removing its directories in a later teardown does not race its last writes.
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /Server listening at (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`bridge exited ${code}: ${stderr}`)));
  });
  const req = async (method: string, path: string, body?: object, headers: Record<string, string> = {}) => {
    const r = await fetch(url + path, {
      method,
      headers: {
        'x-harness-bridge-token': te.env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
        ...(body ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await r.text();
    let parsed: Record<string, any>;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { raw: text };
    }
    return { status: r.status, body: parsed };
  };
  return { child, url, req, stderr: () => stderr };
}
