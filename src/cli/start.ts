import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { execa } from 'execa';
import { closeOnSignal, serveBridge } from './bridge.js';
import { ensureDevSetup } from './init.js';

/**
 * The quick start (`npm start`): development credentials once, then the bridge in this process
 * and the UI server as a child that receives only the access token and the bridge URL (the UI
 * refuses to start holding the integrity key or the human token).
 */
export function registerStart(program: Command): void {
  program
    .command('start')
    .description(
      'quick start: dev credentials (once), the bridge on 127.0.0.1:8787 and the UI on 127.0.0.1:8788',
    )
    .action(async () => {
      const setup = await ensureDevSetup();
      process.stdout.write(
        `${setup.created ? 'created' : 'using'} development credentials in ${setup.envFile}\n`,
      );
      const bridge = await serveBridge({ ...process.env, ...setup.env });
      const ui = execa(process.execPath, [fileURLToPath(new URL('./main.js', import.meta.url)), 'ui'], {
        extendEnv: false,
        env: {
          PATH: process.env['PATH'] ?? '',
          HARNESS_BRIDGE_ACCESS_TOKEN: setup.env['HARNESS_BRIDGE_ACCESS_TOKEN'] ?? '',
          HARNESS_BRIDGE_URL: bridge.url,
          ...(process.env['HARNESS_UI_PORT'] ? { HARNESS_UI_PORT: process.env['HARNESS_UI_PORT'] } : {}),
        },
        stdout: 'inherit',
        stderr: 'inherit',
        reject: false,
      });
      process.stdout.write(
        `approve from another shell: set -a; . ${setup.envFile}; set +a; harness approve <runId> --owner O --scope S --grant\n`,
      );
      closeOnSignal(async () => {
        ui.kill('SIGTERM');
        await bridge.close();
      });
      void ui.then((r) => {
        if (r.exitCode !== 0 && r.exitCode !== undefined)
          process.stderr.write(`UI server exited with code ${r.exitCode}\n`);
      });
    });
}
