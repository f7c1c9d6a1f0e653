import { setTimeout as sleep } from 'node:timers/promises';
import { type BridgeCall, postSourceEvent } from './client.js';
import type { RecordedEvent, ReplayInput } from './recorded.js';
import { newReplayRun, type ReplayRun, type ReplayRunOptions } from './replay-run.js';

export interface ReplayOptions extends ReplayRunOptions {
  /** Recorded gaps (by `ts`) divided by this; undefined: as fast as the bridge answers. */
  speed?: number;
  /** Headers for approval decisions (the human token), asked for only when the input holds one. */
  humanHeaders: () => Record<string, string>;
  progress?: (done: number, total: number) => void;
}

const isDecision = (e: RecordedEvent) =>
  e.event.type === 'approval.granted' || e.event.type === 'approval.denied';

/**
 * Posts a recorded run as a new `replay` run (replay-run.ts makes it, with its artifact root).
 * Each event keeps its fields, `id` and `ts` included (an event id is unique within its run, and
 * this run is new), but for runMode and eventSource, which become `replay` and the input's source.
 * A refused event stops the replay: the error names its line (or seq), and the events before it
 * stay posted.
 */
export async function replay(call: BridgeCall, input: ReplayInput, opts: ReplayOptions): Promise<ReplayRun> {
  const decision = input.events.find(isDecision);
  const human = decision === undefined ? {} : opts.humanHeaders();
  const made = await newReplayRun(call, input, opts);
  let previous: number | undefined;
  for (const [i, recorded] of input.events.entries()) {
    const at = recorded.event.ts === undefined ? Number.NaN : Date.parse(recorded.event.ts);
    if (opts.speed !== undefined && previous !== undefined && !Number.isNaN(at) && at > previous)
      await sleep((at - previous) / opts.speed);
    if (!Number.isNaN(at)) previous = at;
    const event = { ...recorded.event, runMode: 'replay', eventSource: input.source };
    await postSourceEvent(
      call,
      made.runId,
      event,
      `${recorded.where} (run ${made.runId})`,
      isDecision(recorded) ? human : {},
    );
    opts.progress?.(i + 1, input.events.length);
  }
  return made;
}
