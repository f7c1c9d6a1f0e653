import type { RuntimeTable } from './table.js';

/** Gemini CLI (the seed's runtime-c): hooks and servers in `.gemini/settings.json`; timeouts in ms. */
export const gemini: RuntimeTable = {
  name: 'gemini',
  label: 'Gemini CLI',
  actor: 'runtime-c',
  events: {
    'session-start': 'SessionStart',
    'pre-tool': 'BeforeTool',
    'post-tool': 'AfterTool',
    stop: 'AfterAgent',
  },
  toolMatcher: '.*',
  timeouts: { 'session-start': 30_000, 'pre-tool': 600_000, 'post-tool': 60_000, stop: 120_000 },
  timeoutUnit: 'milliseconds',
  hookFields: { name: 'harness' },
  hooksFile: {
    project: { scope: 'project', path: '.gemini/settings.json', format: 'json' },
    user: { scope: 'user', path: '.gemini/settings.json', format: 'json' },
  },
  mcpFile: {
    project: { scope: 'project', path: '.gemini/settings.json', format: 'json' },
    user: { scope: 'user', path: '.gemini/settings.json', format: 'json' },
  },
  installNote:
    "some Gemini CLI versions run hooks only when an experimental hooks switch is on in settings.json: if the session records nothing, turn it on as your version's hooks documentation says",
  otherConfigFiles: [],
  triggerFields: ['source', 'trigger'],
  shellTools: ['run_shell_command'],
  writeTools: { write_file: ['file_path'], replace: ['file_path'] },
  patchTools: [],
  // AfterAgent: "deny" rejects the response and sends the reason to the agent as a new prompt.
  blockStop: (reason) => ({ exitCode: 0, stdout: `${JSON.stringify({ decision: 'deny', reason })}\n` }),
};
