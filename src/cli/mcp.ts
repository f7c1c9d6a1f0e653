import type { Command } from 'commander';
import { NOT_AGENT_SIDE } from '../contract/agent-side.js';
import { bridgeUrl, refuseCredentials, requireEnv } from './env.js';

/**
 * `harness mcp`: the stdio tool server (CONTRACT section 8). It holds the access token only: with
 * the integrity key, the export key or the human approval token in its environment it refuses to start (one line,
 * exit 2), so an agent that configures it can never mint approvals or forge run state. stdout is
 * the protocol channel: nothing else is ever written to it.
 */
export function registerMcp(program: Command): void {
  program
    .command('mcp')
    .description(
      'serve the harness.* tools over stdio for an MCP client (token from HARNESS_BRIDGE_ACCESS_TOKEN, else connector.json tokenFile)',
    )
    .action(async () => {
      refuseCredentials(NOT_AGENT_SIDE, 'harness mcp');
      // As the hooks do: the environment's token, else the agent.env file connector.json names.
      const { clientToken } = await import('../connectors/config.js');
      const token =
        (await clientToken(process.env, process.cwd())) ?? requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN');
      bridgeUrl(process.env);
      const { serveMcp } = await import('../mcp/server.js');
      await serveMcp(token);
    });
}
