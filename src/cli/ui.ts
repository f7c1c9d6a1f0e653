import type { Command } from 'commander';
import { loadUiConfig } from '../ui/config.js';
import { buildUiServer } from '../ui/server.js';
import { UsageError } from './env.js';

const oneLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).split('\n')[0]!;

/**
 * One read at startup with the UI server's token: a token the bridge refuses would make every page
 * show the refusal, so it is said once here, where the operator started the server. A bridge not
 * up yet is not a fault (the pages say "Bridge lost" until it is), so nothing is said then.
 */
async function warnIfRefused(bridge: URL, token: string, timeoutMs: number): Promise<void> {
  const res = await fetch(new URL('/runs?limit=1', bridge), {
    headers: { 'x-harness-bridge-token': token },
    redirect: 'manual',
    signal: AbortSignal.timeout(timeoutMs),
  }).catch(() => null);
  await res?.body?.cancel();
  if (res?.status === 401)
    process.stderr.write(
      `harness ui: the bridge at ${bridge.origin} refuses this HARNESS_BRIDGE_ACCESS_TOKEN; every page will show the refusal until harness ui is restarted with the bridge's access token\n`,
    );
}

/**
 * `harness ui`: the web app and the read-only /api/bridge proxy. Configuration comes from the
 * environment only (docs/ui.md); a bad variable is a UsageError, so main exits 2 naming it.
 */
export function registerUi(program: Command): void {
  program
    .command('ui')
    .description(
      'serve the operator UI and its read-only /api/bridge proxy (HARNESS_UI_HOST, HARNESS_UI_PORT)',
    )
    .action(async () => {
      const config = loadUiConfig(process.env);
      const app = await buildUiServer({ ...config, logger: { level: 'warn' } });
      try {
        await app.listen({ host: config.host, port: config.port });
      } catch (err) {
        // A port in use (or a host not configured) is the environment's fault: exit 2, one line
        // naming the variables, as the bridge does for HARNESS_BRIDGE_PORT.
        await app.close();
        throw new UsageError(
          `harness ui refuses to start: HARNESS_UI_PORT ${config.port} cannot be bound on HARNESS_UI_HOST ${config.host}: ${oneLine(err)}`,
        );
      }
      // Before the listening line, so whatever it has to say comes first.
      await warnIfRefused(config.bridgeUrl, config.accessToken, config.timeoutMs);
      const address = app.server.address();
      const port = typeof address === 'object' && address !== null ? address.port : config.port;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      process.stdout.write(
        `harness ui listening at http://${host}:${port}/ (bridge ${config.bridgeUrl.origin})\n`,
      );
      const stop = () => void app.close().then(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}
