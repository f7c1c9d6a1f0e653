import { runHook } from '../connectors/hook.js';
import { RUNTIME_NAMES, runtimeTable } from '../connectors/runtimes.js';

/** A payload larger than this is not one a runtime sends (a Write of a huge file aside): refused. */
const STDIN_MAX_BYTES = 32 * 1024 * 1024;
/** The runtime writes the payload and closes standard input at once; a stdin left open is not a hook call. */
const STDIN_DEADLINE_MS = 10_000;

function readStdin(): Promise<string | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (v: string | null) => {
      clearTimeout(timer);
      process.stdin.removeAllListeners();
      process.stdin.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => done(null), STDIN_DEADLINE_MS);
    process.stdin.on('data', (c: Buffer) => {
      size += c.length;
      if (size > STDIN_MAX_BYTES) done(null);
      else chunks.push(c);
    });
    process.stdin.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', () => done(null));
  });
}

/**
 * `harness hook <runtime>`: the command the runtime's hooks run (installed by `harness connect`).
 * Exit 0 go on, 2 block (the reason on stderr, or the runtime's JSON on stdout for a stop), 1 a
 * non-blocking warning; stdout carries nothing but that JSON.
 */
export async function hookMain(args: string[]): Promise<void> {
  const table = args.length === 1 ? runtimeTable(args[0]!) : undefined;
  if (table === undefined) {
    process.stderr.write(
      `harness hook: usage: harness hook <${RUNTIME_NAMES.join('|')}> (the payload on standard input)\n`,
    );
    process.exitCode = 2;
    return;
  }
  const input = await readStdin();
  const answer =
    input === null
      ? {
          exitCode: 1 as const,
          stderr: 'harness hook: standard input was not a payload (too large, or not closed in time)\n',
        }
      : await runHook(table, input, process.env);
  if (answer.stdout) process.stdout.write(answer.stdout);
  if (answer.stderr) process.stderr.write(answer.stderr);
  process.exitCode = answer.exitCode;
}
