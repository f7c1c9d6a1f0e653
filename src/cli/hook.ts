import { read } from 'node:fs';
import { runHook } from '../connectors/hook.js';
import { RUNTIME_NAMES, runtimeTable } from '../connectors/runtimes.js';

/** A payload larger than this is not one a runtime sends (a Write of a huge file aside): refused. */
const STDIN_MAX_BYTES = 32 * 1024 * 1024;
/** The runtime writes the payload and closes standard input at once; a stdin left open is not a hook call. */
const STDIN_DEADLINE_MS = 10_000;

/**
 * Standard input read from fd 0 directly: `process.stdin` would build a stream over a socket for
 * the runtime's pipe, two thirds of a bare Node start in instructions, on every tool call.
 */
function readStdin(): Promise<string | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => resolve(null), STDIN_DEADLINE_MS);
    const done = (v: string | null) => {
      clearTimeout(timer);
      resolve(v);
    };
    const next = (): void =>
      read(0, Buffer.allocUnsafe(65536), 0, 65536, null, (err, n, buf) => {
        // A non-blocking pipe with nothing in it yet: look again shortly, within the deadline.
        if (err?.code === 'EAGAIN') return void setTimeout(next, 5);
        if (err) return done(null);
        if (n === 0) return done(Buffer.concat(chunks).toString('utf8'));
        size += n;
        if (size > STDIN_MAX_BYTES) return done(null);
        chunks.push(buf.subarray(0, n));
        next();
      });
    next();
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
  // The streams are made only when there is something to say; a runtime that closed its end early
  // has what it needs, and the exit code still stands.
  const say = (stream: () => NodeJS.WriteStream, text: string | undefined) => {
    if (!text) return;
    stream().on('error', () => {});
    stream().write(text);
  };
  say(() => process.stdout, answer.stdout);
  say(() => process.stderr, answer.stderr);
  process.exitCode = answer.exitCode;
  // A read of standard input still waiting (never closed, or past the size bound) would hold the
  // process open: the answer is given, so it ends here (stdout and stderr are synchronous on pipes
  // and files on Linux).
  if (input === null) process.exit();
}
