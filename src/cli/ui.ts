import type { Command } from 'commander';
import { loadUiConfig } from '../ui/config.js';
import { buildUiServer } from '../ui/server.js';

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
      await app.listen({ host: config.host, port: config.port });
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
