/**
 * What an agent-side process (a hook, `harness mcp`, `outbox flush`, `doctor`, the UI server) never
 * holds (SPEC Authentication 7): the bridge's integrity key, its export key (the private half that
 * signs run bundles) and the human's approval token. Each such process refuses to start with any of
 * them in its environment, and a token file holding one is refused as the agent's token source.
 * A leaf module, so the hook bundle takes it without the CLI's other modules.
 */
export const NOT_AGENT_SIDE = [
  'HARNESS_BRIDGE_INTEGRITY_KEY',
  'HARNESS_BRIDGE_EXPORT_KEY',
  'HARNESS_HUMAN_APPROVAL_TOKEN',
] as const;
