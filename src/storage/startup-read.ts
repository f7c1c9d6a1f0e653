import { stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { RunConfig } from '../contract/index.js';
import type { LayoutFindings } from './layout.js';
import { StartupError } from './lease.js';
import { type IndexRead, RUN_INDEX_FILE } from './run-index-file.js';
import { RunTable } from './run-table.js';

/**
 * Startup's read of a large data directory on a thread of its own: the run index (a bridge may
 * hold 100,000 runs) and the layout scan, which lists every run directory. The thread is made as
 * the bridge command starts and loads its modules meanwhile. Told the data directory, it reads the
 * run index at once, before the lease is taken; once the lease is held it checks that the file is
 * the one it read (same inode, size and change times: the bridge only appends to it or replaces
 * it), reading it again if not, then lists the data directory, which it never does before the
 * lease. While it works, the main thread loads the server's modules and builds the server: on
 * two cores the two overlap, and a start with many runs costs little more than one with few
 * (docs/performance.md, "Many runs").
 *
 * What the thread sends back is what the same calls return on the main thread: `readIndexFile`'s
 * read (the run table's columns transferred, not copied) and `scanLayout`'s findings.
 */
export interface StartupRead {
  read: IndexRead;
  found: LayoutFindings;
}

export interface StartupReadInput {
  dataDir: string;
  key: Uint8Array;
  trustPin: string;
  maxRuns: number;
}

/** An index file this large or larger is read on the startup reader's thread. */
export const STARTUP_READER_MIN_BYTES = 2 * 1024 * 1024;

/** A config, or why it failed, as the thread sends it (an Error's class does not cross). */
type SentConfig = RunConfig | { failed: string };

type Message =
  | {
      read: IndexRead;
      found: Omit<LayoutFindings, 'configs'> & { configs: [string, SentConfig][] };
    }
  | { failure: string; startup: boolean };

/** The thread's answer and what it transfers (storage/startup-read-worker.ts). */
export function toMessage(
  read: IndexRead,
  found: LayoutFindings,
): { message: Message; transfer: ArrayBuffer[] } {
  const configs = [...found.configs].map(([dir, c]): [string, SentConfig] => [
    dir,
    c instanceof Error ? { failed: c.message } : c,
  ]);
  if (read.kind !== 'read') return { message: { read, found: { ...found, configs } }, transfer: [] };
  // The directory set served the layout scan here; the main thread has the scan's listing.
  const { dirs: _, ...sent } = read;
  const transfer = [...new Set(read.runs.buffers())] as ArrayBuffer[];
  return { message: { read: sent, found: { ...found, configs } }, transfer };
}

function fromMessage(message: Message): StartupRead {
  if ('failure' in message)
    throw message.startup ? new StartupError(message.failure) : new Error(message.failure);
  const { read, found } = message;
  const configs = new Map(
    found.configs.map(([dir, c]): [string, RunConfig | Error] => [
      dir,
      'failed' in c ? new Error(c.failed) : c,
    ]),
  );
  if (read.kind === 'read') RunTable.revive(read.runs);
  return { read, found: { ...found, configs } };
}

const self = fileURLToPath(import.meta.url);
const workerFile = new URL(`./startup-read-worker${extname(self)}`, import.meta.url);

export class StartupReader {
  /** The thread's answer: settled by its message, or by its failing or ending first. */
  private readonly answer: Promise<Message>;

  private constructor(private readonly worker: Worker) {
    this.answer = new Promise<Message>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) =>
        reject(new Error(`the startup reader ended (${code}) without an answer`)),
      );
    });
    // A start that fails before `read` never asks for the answer.
    this.answer.catch(() => {});
  }

  /**
   * A reader for `dataDir` when its index file is at least `minBytes` (a start with few runs
   * reads them faster on the main thread than a thread starts), else null. The file's size only
   * chooses the thread: `prepare` names the directory read.
   */
  static async forDataDir(
    dataDir: string,
    minBytes = STARTUP_READER_MIN_BYTES,
  ): Promise<StartupReader | null> {
    const size = await stat(join(dataDir, RUN_INDEX_FILE)).then(
      (s) => s.size,
      () => 0,
    );
    if (size < minBytes) return null;
    const worker = new Worker(workerFile);
    // Never what keeps the process alive: a start that fails before `read` ends it (`cancel`).
    worker.unref();
    return new StartupReader(worker);
  }

  /** The checked environment's data directory and key: the index is read from now on. */
  prepare(input: StartupReadInput): void {
    // The key copied alone: a clone of a pooled Buffer would carry its whole pool.
    this.worker.postMessage({ prepare: { ...input, key: Uint8Array.from(input.key) } });
  }

  /** The read, now that the lease is held: the index file checked (or read again), then the layout. */
  async read(): Promise<StartupRead> {
    // Waited on from here: the thread keeps the process alive until it answers (it then ends).
    this.worker.ref();
    this.worker.postMessage({ read: true });
    return fromMessage(await this.answer);
  }

  /** Ends the thread (a start that failed, or one done with it). */
  async cancel(): Promise<void> {
    await this.worker.terminate();
  }
}
