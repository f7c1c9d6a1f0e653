import { setTimeout as sleep } from 'node:timers/promises';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { type BridgeCall, createFreshRun, postSourceEvent, SourceError } from './client.js';
import type { RecordedEvent, ReplayInput } from './recorded.js';

export interface ReplayOptions {
  /** The run to create; by default `<name>-replay-<n>`, the first n whose run does not exist. */
  as?: string;
  /** Recorded gaps (by `ts`) divided by this; undefined: as fast as the bridge answers. */
  speed?: number;
  /** Headers for approval decisions (the human token), asked for only when the input holds one. */
  humanHeaders: () => Record<string, string>;
  progress?: (done: number, total: number) => void;
}

const MAX_NUMBER = 1000;
const isDecision = (e: RecordedEvent) =>
  e.event.type === 'approval.granted' || e.event.type === 'approval.denied';

/**
 * Posts a recorded run as a new `replay` run. Each event keeps its fields, `id` and `ts` included
 * (an event id is unique within its run, and this run is new), but for runMode and eventSource,
 * which become `replay` and the input's source. The run is created first and must be new, so a
 * replay never appends to (or completes) an existing run. A refused event stops the replay: the
 * error names its line, and the events before it stay posted.
 */
export async function replay(call: BridgeCall, input: ReplayInput, opts: ReplayOptions): Promise<string> {
  const decision = input.events.find(isDecision);
  const human = decision === undefined ? {} : opts.humanHeaders();
  const runId = await newReplayRun(call, input, opts.as);
  let previous: number | undefined;
  for (const [i, recorded] of input.events.entries()) {
    const at = recorded.event.ts === undefined ? Number.NaN : Date.parse(recorded.event.ts);
    if (opts.speed !== undefined && previous !== undefined && !Number.isNaN(at) && at > previous)
      await sleep((at - previous) / opts.speed);
    if (!Number.isNaN(at)) previous = at;
    const event = { ...recorded.event, runMode: 'replay', eventSource: input.source };
    await postSourceEvent(
      call,
      runId,
      event,
      `${recorded.where} (run ${runId})`,
      isDecision(recorded) ? human : {},
    );
    opts.progress?.(i + 1, input.events.length);
  }
  return runId;
}

async function newReplayRun(call: BridgeCall, input: ReplayInput, as: string | undefined): Promise<string> {
  const body = (id: string) => ({
    id,
    runMode: 'replay' as const,
    eventSource: input.source,
    title: `replay of ${input.name}`.slice(0, 200),
  });
  if (as !== undefined) {
    if (!RUN_ID_PATTERN.test(as)) throw new SourceError('--as is not a canonical run ID', 2);
    if (await createFreshRun(call, body(as))) return as;
    throw new SourceError(`run ${as} exists already: a replay is posted as a new run`, 1);
  }
  const stem = runIdStem(input.name);
  for (let n = 1; n <= MAX_NUMBER; n += 1) {
    const id = `${stem}-replay-${n}`;
    if (await createFreshRun(call, body(id))) return id;
  }
  throw new SourceError(`runs ${stem}-replay-1 to -${MAX_NUMBER} all exist: name the replay with --as`, 1);
}

/** The input's name as the start of a canonical run ID (other characters become `-`). */
export function runIdStem(name: string): string {
  const stem = name
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 100);
  return stem === '' ? 'run' : stem;
}
