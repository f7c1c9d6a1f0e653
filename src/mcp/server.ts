import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { type DocumentChecker, documentChecker } from '../contract/artifacts/check.js';
import { BRIDGE_VERSION } from '../contract/index.js';
import { createFinishLineCheck } from '../validators/runner.js';
import { BridgeNoAnswer, BridgeUnreachable, McpSession, type ToolDefinition } from './context.js';
import { emitEvent, requestApproval, startRun } from './event-tools.js';
import { finishLineCheck } from './finish-line-check.js';
import { failure } from './result.js';
import { MCP_MESSAGE_MAX_BYTES } from './schemas.js';
import { writeArtifact } from './write-artifact.js';

/** The five tools of SPEC "What the service does" 8, in workflow order. */
export const TOOLS: readonly ToolDefinition[] = [
  startRun,
  emitEvent,
  writeArtifact,
  requestApproval,
  finishLineCheck,
];

const INSTRUCTIONS =
  'Report a workflow run to the local harness bridge. Start with harness.start_run (set an absolute artifactRoot), enter and pass each required node with harness.emit_event (nodeState passed), write each node artifact with harness.write_artifact, ask a human with harness.request_approval, and call harness.finish_line_check before emitting run.completed. Failures come back as isError results whose JSON carries the contract error code and every problem.';

/**
 * The low-level SDK Server: it takes the tools' JSON Schemas as they are (the high-level McpServer
 * wants zod), and the arguments are checked against the same compiled schemas before a tool runs.
 */
export function createMcpServer(session: McpSession): Server {
  const server = new Server(
    { name: 'harness-bridge', version: BRIDGE_VERSION },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  const byName = new Map<string, { tool: ToolDefinition; checker: DocumentChecker }>(
    TOOLS.map((tool) => [tool.name, { tool, checker: documentChecker(tool.name, tool.inputSchema) }]),
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: TOOLS.map((t) => ({
      name: t.name,
      description: t.description,
      // A plain JSON copy: the TypeBox objects carry non-JSON markers.
      inputSchema: JSON.parse(JSON.stringify(t.inputSchema)),
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const entry = byName.get(request.params.name);
    if (!entry) return failure('unknown_tool', `no tool is named ${request.params.name}`);
    const args = request.params.arguments ?? {};
    const problems = entry.checker.problems(args);
    if (problems.length > 0) {
      return failure('invalid_tool_input', `the arguments of ${entry.tool.name} are invalid`, problems);
    }
    // The bridge refuses a body carrying a credential; a tool argument can reach a file name, a
    // file's bytes or a result without ever being a body, so it is refused here first.
    if (carries(args, session.accessToken)) {
      return failure('invalid_tool_input', 'an argument carries the bridge access token', [
        'credentials travel only in the tool server environment, never in tool arguments',
      ]);
    }
    try {
      return await entry.tool.run(session, args);
    } catch (err) {
      if (err instanceof BridgeUnreachable) return failure('bridge_unreachable', err.message);
      if (err instanceof BridgeNoAnswer) return failure('bridge_timeout', err.message);
      process.stderr.write(
        `harness mcp: ${entry.tool.name}: ${err instanceof Error ? err.stack : String(err)}\n`,
      );
      return failure('internal_error', `${entry.tool.name} failed unexpectedly`);
    }
  });
  return server;
}

/** Whether any string in `value` (names included), or base64 content once decoded, holds `secret`. */
function carries(value: unknown, secret: string): boolean {
  if (typeof value === 'string') return value.includes(secret);
  if (typeof value !== 'object' || value === null) return false;
  return Object.entries(value).some(
    ([name, v]) =>
      name.includes(secret) ||
      carries(v, secret) ||
      (name === 'contentBase64' && typeof v === 'string' && Buffer.from(v, 'base64').includes(secret)),
  );
}

/** Serves the tools on stdin/stdout until the client closes the stream. */
export async function serveMcp(token: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const gate = createFinishLineCheck({ concurrency: 1, deadlineMs: 120_000 });
  const server = createMcpServer(new McpSession(token, gate, env));
  const transport = new StdioServerTransport(process.stdin, process.stdout, {
    maxBufferSize: MCP_MESSAGE_MAX_BYTES,
  });
  // A transport failure (a message over the limit closes the session) is said, not silent.
  server.onerror = (err) => process.stderr.write(`harness mcp: ${err.message}\n`);
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.connect(transport);
  await closed;
  await server.close();
}
