import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { execa } from '#execa';
import { closeOnSignal, exitWhenStopped, serveBridge } from './bridge.js';
import { describeDevFiles, ensureDevSetup, shellHints } from './init.js';

/** The UI server's own settings, passed on when set: the UI child checks each (exit 2 naming it). */
const UI_SETTINGS = ['HARNESS_UI_PORT', 'HARNESS_UI_HOST', 'HARNESS_BRIDGE_PROXY_TIMEOUT_MS'] as const;

function uiSettings(): Record<string, string> {
  const set: Record<string, string> = {};
  for (const name of UI_SETTINGS) {
    const value = process.env[name];
    if (value) set[name] = value;
  }
  return set;
}

/**
 * The quick start (`npm start`): development credentials once (and any missing role file), then
 * the bridge in this process and the UI server as a child that receives only the access token and
 * the bridge URL (the UI refuses to start holding the integrity key or the human token).
 */
export function registerStart(program: Command): void {
  program
    .command('start')
    .description(
      'quick start: dev credentials (once), the bridge on 127.0.0.1:8787 and the UI on 127.0.0.1:8788',
    )
    .action(async () => {
      const setup = await ensureDevSetup();
      process.stdout.write(describeDevFiles(setup));
      const bridge = await serveBridge({ ...process.env, ...setup.env });
      const uiPort = process.env['HARNESS_UI_PORT'] || '8788';
      const ui = execa(process.execPath, [fileURLToPath(new URL('./main.cjs', import.meta.url)), 'ui'], {
        extendEnv: false,
        env: {
          PATH: process.env['PATH'] ?? '',
          HARNESS_BRIDGE_ACCESS_TOKEN: setup.env['HARNESS_BRIDGE_ACCESS_TOKEN'] ?? '',
          HARNESS_BRIDGE_URL: bridge.url,
          ...uiSettings(),
        },
        stdout: 'inherit',
        stderr: 'inherit',
        reject: false,
      });
      process.stdout.write(shellHints(setup, bridge.url));
      let stopping = false;
      closeOnSignal(async () => {
        stopping = true;
        ui.kill('SIGTERM');
        await bridge.close();
      });
      exitWhenStopped(bridge.stopped, 'start', () => {
        stopping = true;
        ui.kill('SIGTERM');
      });
      // The quick start is the bridge and its UI: a UI that cannot start (its port taken: it exits
      // 2 with one line naming HARNESS_UI_PORT) or that dies stops the bridge too, rather than
      // leaving a bridge nobody can watch.
      void ui.then(async (r) => {
        if (stopping) return;
        stopping = true;
        const how = r.exitCode !== undefined ? `exit code ${r.exitCode}` : `signal ${r.signal ?? 'unknown'}`;
        process.stderr.write(
          `harness start: the UI server stopped (${how}), so the bridge is stopped too (its own message says why; if HARNESS_UI_PORT ${uiPort} is in use, set HARNESS_UI_PORT to a free port, 0 picks one)\n`,
        );
        await bridge.close().catch((err: Error) => process.stderr.write(`harness start: ${err.message}\n`));
        process.exit(r.exitCode === 2 ? 2 : 1);
      });
    });
}
