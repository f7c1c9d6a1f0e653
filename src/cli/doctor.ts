import { homedir } from 'node:os';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { doctor } from '../connectors/doctor.js';
import { NOT_AGENT_SIDE } from '../contract/agent-side.js';
import { printable } from './connect.js';
import { refuseCredentials } from './env.js';
import { cliLauncher } from './launcher.js';

/**
 * `harness doctor`: checks the agent side of a set-up (bridge, token, each runtime's entries,
 * connector.json, artifact root, outbox), one line each, and warns when the bridge runs as this
 * same user. Exit 1 when any check fails; a warning alone does not fail. It runs
 * where an agent runs, so it holds the access token only, like `harness mcp` and `harness hook`.
 */
export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description("check this project's connector set-up: bridge, token, runtimes, connector.json, outbox")
    .option('--project <dir>', 'the project to check (default: the current directory)')
    .action(async (opts: { project?: string }) => {
      refuseCredentials(NOT_AGENT_SIDE, 'harness doctor');
      const checks = await doctor({
        projectDir: resolve(opts.project ?? '.'),
        home: process.env['HOME'] || homedir(),
        env: process.env,
        launcher: cliLauncher(),
      });
      const lines = checks.map((c) =>
        c.ok ? `ok   ${c.what}` : `${c.warn ? 'WARN' : 'FAIL'} ${c.what}: ${c.todo}`,
      );
      process.stdout.write(printable(lines));
      if (checks.some((c) => !c.ok && !c.warn)) process.exitCode = 1;
    });
}
