import type { StoredEvent } from '../../src/contract/index.js';

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
