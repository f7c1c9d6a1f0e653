import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { TObject } from '#typebox';
import { type BridgeResponse, BridgeTimeout, bridgeRequest } from '../cli/http.js';
import type { FinishLineEnv, RunFacts } from '../validators/facts.js';
import type { Problem } from '../validators/problem.js';

/** The finish-line validators as the tool server runs them (a credential-free child process). */
export type LocalFinishLine = (facts: RunFacts, env: FinishLineEnv) => Promise<Problem[]>;

/** Raised when the bridge cannot be reached at all (never confused with a bridge answer). */
export class BridgeUnreachable extends Error {
  override readonly name = 'BridgeUnreachable';
}

/** The bridge took the request and gave no answer in time: what was sent may have been stored. */
export class BridgeNoAnswer extends Error {
  override readonly name = 'BridgeNoAnswer';
}

/**
 * The tool server's session. It holds the access token and nothing else (`harness mcp` refuses
 * to start holding the integrity key or the human token). The run view deliberately hides the
 * absolute artifact root, so the session remembers the roots the agent gave and the bridge
 * accepted; a root is always cross-checked with the bridge before it is written to.
 */
export class McpSession {
  readonly roots = new Map<string, string>();
  private repoRoot: string | null = null;

  constructor(
    /** The access token: sent to the bridge, and looked for in artifacts (localArtifactProblems). */
    readonly accessToken: string,
    readonly finishLine: LocalFinishLine,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  async request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<BridgeResponse> {
    try {
      return await bridgeRequest(
        path,
        {
          method,
          headers: { 'x-harness-bridge-token': this.accessToken },
          ...(body === undefined ? {} : { body }),
        },
        this.env,
      );
    } catch (err) {
      if (err instanceof BridgeTimeout) throw new BridgeNoAnswer(err.message);
      throw new BridgeUnreachable(err instanceof Error ? err.message : String(err));
    }
  }

  postEvent(runId: string, event: Record<string, unknown>): Promise<BridgeResponse> {
    return this.request('POST', `/runs/${encodeURIComponent(runId)}/events`, event);
  }

  /** The bridge's repository root (where git history and the committed trust store are read). */
  async bridgeRepoRoot(): Promise<string> {
    if (this.repoRoot !== null) return this.repoRoot;
    const res = await this.request('GET', '/health');
    const root = res.body['repoRoot'];
    if (typeof root !== 'string') throw new Error('the bridge /health did not report repoRoot');
    this.repoRoot = root;
    return root;
  }
}

export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: TObject;
  run(session: McpSession, args: Record<string, unknown>): Promise<CallToolResult>;
}
