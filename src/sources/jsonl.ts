import { createReadStream } from 'node:fs';
import { basename, extname } from 'node:path';
import { createInterface } from 'node:readline';
import { runEventProblems } from '../contract/event-problems.js';
import type { RunEvent } from '../contract/index.js';
import { SourceError } from './client.js';
import type { RecordedEvent, ReplayInput } from './recorded.js';

/**
 * A JSONL file of contract events (one RunEvent a line, blank lines ignored), judged whole before
 * anything is posted: the first line that is not JSON, breaks the contract or repeats an earlier
 * line's `id` is refused with its number, and the file with it.
 */
export async function readJsonl(file: string): Promise<ReplayInput> {
  const events: RecordedEvent[] = [];
  const ids = new Map<string, number>();
  let line = 0;
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  try {
    for await (const text of lines) {
      line += 1;
      if (text.trim() === '') continue;
      const event = parseLine(text, line);
      const id = event.id;
      if (id !== undefined) {
        const first = ids.get(id);
        if (first !== undefined) throw bad(line, `its id repeats line ${first}'s`);
        ids.set(id, line);
      }
      events.push({ where: `line ${line}`, event });
    }
  } catch (err) {
    if (err instanceof SourceError) throw err;
    throw new SourceError(`cannot read ${basename(file)}: ${(err as Error).message}`, 2);
  } finally {
    lines.close();
  }
  if (events.length === 0) throw new SourceError(`${basename(file)} holds no events`, 2);
  return { source: 'local-jsonl', events, name: basename(file, extname(file)) };
}

function parseLine(text: string, line: number): RunEvent {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bad(line, 'it is not JSON');
  }
  const problems = runEventProblems(value);
  if (problems.length > 0) throw bad(line, problems.join('; '));
  return value as RunEvent;
}

const bad = (line: number, why: string) =>
  new SourceError(`line ${line} is not a contract event, nothing was posted: ${why}`, 2);
