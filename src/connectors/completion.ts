import type { HookContext } from './context.js';
import type { HookAnswer } from './table.js';

/**
 * Stop (Claude Code and Codex `Stop`, Gemini `AfterAgent`): `run.completed`, and the bridge
 * decides; a refusal appends `run.blocked` there. With `stopGate` the stop itself is refused in the
 * runtime's own way and the model is handed the problems as what is left to do.
 */
export async function recordCompletion(ctx: HookContext): Promise<HookAnswer> {
  const r = await ctx.send(
    {
      type: 'run.completed',
      nodeId: 'handoff',
      status: 'passed',
      message: `${ctx.table.label} stopped and asks to complete the run`,
    },
    ctx.config.completionDeadlineMs,
  );
  if (!ctx.config.stopGate || r.kind === 'stored') return { exitCode: 0 };
  if (r.kind === 'queued')
    return ctx.table.blockStop(
      `The finish line of run ${ctx.runId} could not be checked: the bridge did not answer (${r.why}). Keep the work as it is; the check runs again at the next stop.`,
    );
  const body = r.answer.body;
  if (body['error'] !== 'finish_line_blocked') return { exitCode: 0 };
  const problems = Array.isArray(body['problems']) ? (body['problems'] as unknown[]).map(String) : [];
  return ctx.table.blockStop(
    [
      `The finish line of run ${ctx.runId} does not hold yet (\`harness explain ${ctx.runId}\` lists the same). What is left:`,
      ...problems.map((p) => `- ${p}`),
    ].join('\n'),
  );
}
