import { Command, CommanderError } from 'commander';
import { registerCommands } from './commands.js';
import { clientTimeoutMs, refuseCredentialArguments, UsageError } from './env.js';
import { terminalText } from './terminal.js';
import { packageVersion } from './version.js';

/**
 * A reader that closes the pipe early (`harness explain r | head -3`) has taken what it wanted: the
 * rest of the output is dropped, and the command's own exit code stands instead of a crash on
 * EPIPE. Any other stream error is still thrown.
 */
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

/** Exit codes for every command (CONTRACT section 8): 0 success, 1 check or request failed, 2 usage or environment. */
const program = new Command('harness')
  .description('harness-bridge: local run bridge for agent workflow telemetry')
  .version(packageVersion(), '-V, --version', 'print the harness-bridge version')
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });
await registerCommands(program);

try {
  // Every command: process arguments are visible to every local user (SPEC Authentication).
  refuseCredentialArguments(process.argv.slice(2));
  clientTimeoutMs(process.env);
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode === 0 ? 0 : 2;
  } else if (err instanceof UsageError) {
    process.stderr.write(`harness: ${terminalText(err.message)}\n`);
    process.exitCode = 2;
  } else {
    // A failure can name an artifact path, an adapter value or a bridge answer: agent-chosen text.
    process.stderr.write(`harness: ${terminalText(err instanceof Error ? err.message : String(err))}\n`);
    process.exitCode = 1;
  }
}
