import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

export { CLI } from './paths.js';

/** How the child exits; one still running after 30 s (it should have refused) is killed, code null. */
export async function exitOf(child: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const deadline = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code] = await once(child, 'exit');
  clearTimeout(deadline);
  return { code: code as number | null, stderr };
}
