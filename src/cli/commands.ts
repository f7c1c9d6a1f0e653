import type { Command } from 'commander';

/** Each subcommand lives in its own file and registers itself here (one line per command). */
export function registerCommands(_program: Command): void {}
