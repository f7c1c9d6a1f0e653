import type { Command } from 'commander';
import { registerUi } from './ui.js';

/** Each subcommand lives in its own file and registers itself here (one line per command). */
export function registerCommands(program: Command): void {
  registerUi(program);
}
