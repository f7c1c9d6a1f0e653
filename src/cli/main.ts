#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { registerCommands } from './commands.js';
import { UsageError } from './env.js';

/** Exit codes for every command (CONTRACT section 8): 0 success, 1 check or request failed, 2 usage or environment. */
const program = new Command('harness')
  .description('harness-bridge: local run bridge for agent workflow telemetry')
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });
await registerCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode === 0 ? 0 : 2;
  } else if (err instanceof UsageError) {
    process.stderr.write(`harness: ${err.message}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`harness: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
