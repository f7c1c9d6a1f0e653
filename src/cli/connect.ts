import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { ConfigFileError, connect } from '../connectors/install.js';
import { RUNTIME_NAMES, runtimeTable } from '../connectors/runtimes.js';
import type { RuntimeTable } from '../connectors/table.js';
import { UsageError } from './env.js';
import { cliLauncher } from './launcher.js';
import { terminalText } from './terminal.js';

export function runtimeArgument(name: string): RuntimeTable {
  const table = runtimeTable(name);
  if (table === undefined)
    throw new UsageError(`unknown runtime ${JSON.stringify(name)}: one of ${RUNTIME_NAMES.join(', ')}`);
  return table;
}

/**
 * Lines for the terminal: a configuration file's text (in a dry run's diff) is anyone's, so its
 * control characters are shown escaped; its tabs are indentation and stay.
 */
export function printable(lines: string[]): string {
  return lines.map((l) => `${l.split('\t').map(terminalText).join('\t')}\n`).join('');
}

/**
 * `harness connect <runtime>`: installs (or with --remove takes out) the hooks that run
 * `harness hook <runtime>` and the `harness mcp` server in the runtime's configuration. A file it
 * cannot edit safely is refused (exit 2) and nothing is written.
 */
export function registerConnect(program: Command): void {
  program
    .command('connect')
    .description(`install the connector's hooks and MCP server for a runtime (${RUNTIME_NAMES.join(', ')})`)
    .argument('<runtime>', RUNTIME_NAMES.join(' | '))
    .option('--project <dir>', "install in this project's configuration (default: the current directory)")
    .option('--user', "install in the user's configuration (every project)")
    .option('--dry-run', 'show the changes, write nothing')
    .option('--remove', 'take out our entries only (connector.json stays)')
    .action(
      async (
        name: string,
        opts: { project?: string; user?: boolean; dryRun?: boolean; remove?: boolean },
      ) => {
        const table = runtimeArgument(name);
        if (opts.user && opts.project !== undefined)
          throw new UsageError('--project and --user exclude each other');
        const projectDir = resolve(opts.project ?? '.');
        // A mistyped --project would otherwise become a new folder holding only our files.
        if (!(await stat(projectDir).catch(() => null))?.isDirectory())
          throw new UsageError(`--project ${projectDir} is not a directory`);
        try {
          const { lines } = await connect({
            table,
            scope: opts.user ? 'user' : 'project',
            projectDir,
            home: process.env['HOME'] || homedir(),
            launcher: cliLauncher(),
            remove: opts.remove === true,
            dryRun: opts.dryRun === true,
          });
          process.stdout.write(printable(lines));
        } catch (err) {
          if (err instanceof ConfigFileError) throw new UsageError(`connect refused: ${err.message}`);
          throw err;
        }
      },
    );
}
