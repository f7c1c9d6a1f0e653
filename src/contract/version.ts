/** Names fixed by CONTRACT section 1. */
export const SERVICE = 'harness-bridge';
export const CONTRACT_VERSION = 'harness.connector-events.v0.5';
export const BRIDGE_VERSION = '0.8';
