import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { TestBridge } from './bridge.js';
import { CLI } from './paths.js';

/**
 * The MCP side of the tests: the SDK's own Client over a real stdio transport, spawning the built
 * CLI (`node dist/src/cli/main.cjs mcp`, so `npm run build` first) against an in-process bridge.
 * The child gets the access token and the bridge URL only, as a configured agent would.
 */
export const MAIN = CLI;

export interface ToolAnswer {
  isError: boolean;
  body: Record<string, any>;
}

export interface McpHarness {
  client: Client;
  call(name: string, args: Record<string, unknown>): Promise<ToolAnswer>;
  stderr(): string;
}

export function agentEnv(bridge: TestBridge): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: bridge.t.dir,
    HARNESS_BRIDGE_URL: bridge.url,
    HARNESS_BRIDGE_ACCESS_TOKEN: bridge.t.env['HARNESS_BRIDGE_ACCESS_TOKEN'] ?? '',
  };
}

export async function connectMcp(
  t: { teardown(fn: () => unknown): void },
  bridge: TestBridge,
): Promise<McpHarness> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, 'mcp'],
    env: agentEnv(bridge),
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const client = new Client({ name: 'harness-mcp-test', version: '0.0.0' });
  await client.connect(transport);
  t.teardown(() => client.close());
  return {
    client,
    stderr: () => err,
    async call(name, args) {
      const r = await client.callTool({ name, arguments: args });
      const content = r.content as { type: string; text: string }[];
      if (content.length !== 1 || content[0]?.type !== 'text') throw new Error('expected one text content');
      return { isError: r.isError === true, body: JSON.parse(content[0].text) };
    },
  };
}

/** The fields every live event through the tool server needs besides its type and node. */
export const live = { actor: 'runtime-a', message: 'm', status: 'ok' } as const;
