/**
 * The finish-line validator process: reads one JSON request `{facts, env}` from stdin, runs the
 * orchestrator and writes one JSON result to stdout. It is started by runner.ts with an explicit
 * environment that lacks every bridge credential; it holds none and needs none.
 *
 * `--report-environment` (an explicit argument only the runner's probe passes) makes it print the
 * names of its environment variables instead, so tests can prove the credentials are absent.
 */
import { runFinishLine } from './finish-line.js';

const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BYTES) throw new Error('request too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<void> {
  if (process.argv.includes('--report-environment')) {
    process.stdout.write(JSON.stringify({ ok: true, environmentNames: Object.keys(process.env).sort() }));
    return;
  }
  const request = JSON.parse(await readStdin()) as { facts: never; env: never };
  const result = await runFinishLine(request.facts, request.env);
  process.stdout.write(JSON.stringify({ ok: true, ...result }));
}

main().catch((err: unknown) => {
  process.stderr.write(`finish-line child: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 3;
});
