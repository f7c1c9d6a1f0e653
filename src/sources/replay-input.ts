import { readJsonl } from './jsonl.js';
import type { ReplayInput } from './recorded.js';

/** Reads a replay input; today a JSONL file of contract events (source local-jsonl). */
export function readReplayInput(file: string): Promise<ReplayInput> {
  return readJsonl(file);
}
