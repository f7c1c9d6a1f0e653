import type { StoredEvent } from '../../src/contract/index.js';
import type { JournalWriter } from '../../src/storage/journal.js';

/** A stored event for tests that drive a JournalWriter directly (no HTTP, no id or ts filled in). */
export const storedEvent = (n: number, message = `event ${n}`) =>
  ({
    id: `e${n}`,
    ts: '2026-11-26T00:00:00.000Z',
    type: 'gate.fired',
    actor: 'harness',
    runMode: 'live',
    eventSource: 'api',
    nodeId: 'intake',
    message,
    status: 'ok',
  }) as StoredEvent;

/** The descriptor of a JournalWriter's file (private to it), for syscall spies. */
export const journalFd = (journal: JournalWriter): number =>
  (journal as unknown as { handle: { fd: number } }).handle.fd;
