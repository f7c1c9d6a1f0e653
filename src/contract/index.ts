export * from './enums.js';
export * from './errors.js';
export * from './event.js';
export * from './limits.js';
export * from './nodes.js';
export type * from './run-config.js';
export * from './run-state.js';
export * from './version.js';
export * from './views.js';
