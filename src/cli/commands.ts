import type { Command } from 'commander';

type Register = (program: Command) => void;

/**
 * Each subcommand lives in its own file and registers itself; this table maps the top-level
 * command name to its file. Only the command being run is imported (the bridge and the UI pull in
 * Fastify and the schema compilers, which `harness emit` has no use for); `--help`, no command or
 * an unknown one loads them all so commander can list or refuse as usual; `--version` loads none.
 */
const COMMANDS: Record<string, () => Promise<Register>> = {
  approve: async () => (await import('./approve.js')).registerApprove,
  blueprint: async () => (await import('./sources.js')).registerBlueprint,
  bridge: async () => (await import('./bridge.js')).registerBridge,
  'browser-relay': async () => (await import('./browser-relay.js')).registerBrowserRelay,
  connect: async () => (await import('./connect.js')).registerConnect,
  doctor: async () => (await import('./doctor.js')).registerDoctor,
  emit: async () => (await import('./emit.js')).registerEmit,
  export: async () => (await import('./export.js')).registerExport,
  explain: async () => (await import('./explain.js')).registerExplain,
  init: async () => (await import('./init.js')).registerInit,
  proof: async () => (await import('./proof-run.js')).registerProofRun,
  replay: async () => (await import('./sources.js')).registerReplay,
  review: async () => (await import('./review.js')).registerReview,
  route: async () => (await import('./route-write.js')).registerRoute,
  run: async () => (await import('./run-create.js')).registerRunCreate,
  mcp: async () => (await import('./mcp.js')).registerMcp,
  node: async () => (await import('./node.js')).registerNode,
  outbox: async () => (await import('./outbox.js')).registerOutbox,
  packet: async () => (await import('./packet-write.js')).registerPacket,
  start: async () => (await import('./start.js')).registerStart,
  store: async () => (await import('./store-copy.js')).registerStoreCopy,
  ui: async () => (await import('./ui.js')).registerUi,
  verify: async () => (await import('./verify.js')).registerVerify,
  watch: async () => (await import('./sources.js')).registerWatch,
};

export async function registerCommands(program: Command, argv: string[] = process.argv): Promise<void> {
  const name = argv[2];
  if (name === '--version' || name === '-V') return;
  const only = name !== undefined && Object.hasOwn(COMMANDS, name) ? [COMMANDS[name]!] : null;
  for (const load of only ?? Object.values(COMMANDS)) (await load())(program);
}
