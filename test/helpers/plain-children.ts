/**
 * Loaded into every test process (tap's `node-arg`, package.json). tap's process tracker
 * (@tapjs/processinfo) adds its module loader to NODE_OPTIONS of every process a test starts, even
 * one given an explicit environment, and from there to every process those start: each bridge,
 * CLI run and validator child then loads its modules through a loader thread (a bridge took
 * 1.25 s to listen instead of 0.65 s, and twice the CPU; docs/performance.md). Coverage is off,
 * so nothing reads what the tracker records. This strips the loader from the environment of
 * every process a test starts, which then runs as it would outside the tests.
 *
 * The tracker adds it through process-on-spawn, whose listeners live on one global symbol; the
 * listener added here runs after the tracker's. Without that state (another tap) nothing changes.
 */
const STATE = Symbol.for('process-on-spawn@*:singletonId');

interface SpawnOptions {
  env: NodeJS.ProcessEnv;
}

const state = (globalThis as Record<symbol, unknown>)[STATE] as
  | { listeners: ((opts: SpawnOptions) => void)[] }
  | undefined;

/** NODE_OPTIONS without the tracker's `--import`/`--loader` (its words may be double-quoted). */
export function withoutTracker(nodeOptions: string): string {
  const words = nodeOptions.match(/"(?:[^"\\]|\\.)*"|\S+/g) ?? [];
  return words.filter((w) => !w.includes('@tapjs/processinfo')).join(' ');
}

state?.listeners.push((opts) => {
  const env = { ...opts.env };
  for (const name of Object.keys(env)) if (name.startsWith('_TAPJS_PROCESSINFO_')) delete env[name];
  const nodeOptions = withoutTracker(env['NODE_OPTIONS'] ?? '');
  if (nodeOptions === '') delete env['NODE_OPTIONS'];
  else env['NODE_OPTIONS'] = nodeOptions;
  opts.env = env;
});
