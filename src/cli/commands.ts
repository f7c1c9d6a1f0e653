import type { Command } from 'commander';
import { registerApprove } from './approve.js';
import { registerBridge } from './bridge.js';
import { registerEmit } from './emit.js';
import { registerExplain } from './explain.js';
import { registerInit } from './init.js';
import { registerMcp } from './mcp.js';
import { registerProofRun } from './proof-run.js';
import { registerReview } from './review.js';
import { registerRunCreate } from './run-create.js';
import { registerStart } from './start.js';
import { registerUi } from './ui.js';
import { registerVerify } from './verify.js';

/** Each subcommand lives in its own file and registers itself here (one line per command). */
export function registerCommands(program: Command): void {
  registerApprove(program);
  registerBridge(program);
  registerEmit(program);
  registerExplain(program);
  registerInit(program);
  registerProofRun(program);
  registerReview(program);
  registerRunCreate(program);
  registerMcp(program);
  registerStart(program);
  registerUi(program);
  registerVerify(program);
}
