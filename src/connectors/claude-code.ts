import type { RuntimeTable } from './table.js';

/** Claude Code (the seed's runtime-a): hooks in `.claude/settings.json`, servers in `.mcp.json`. */
export const claudeCode: RuntimeTable = {
  name: 'claude-code',
  label: 'Claude Code',
  actor: 'runtime-a',
  events: {
    'session-start': 'SessionStart',
    'pre-tool': 'PreToolUse',
    'post-tool': 'PostToolUse',
    stop: 'Stop',
  },
  toolMatcher: '*',
  timeouts: { 'session-start': 30, 'pre-tool': 600, 'post-tool': 60, stop: 120 },
  timeoutUnit: 'seconds',
  hooksFile: {
    project: { scope: 'project', path: '.claude/settings.json', format: 'json' },
    user: { scope: 'user', path: '.claude/settings.json', format: 'json' },
  },
  mcpFile: {
    project: { scope: 'project', path: '.mcp.json', format: 'json' },
    user: { scope: 'user', path: '.claude.json', format: 'json' },
  },
  otherConfigFiles: [{ scope: 'project', path: '.claude/settings.local.json', format: 'json' }],
  triggerFields: ['source'],
  shellTools: ['Bash'],
  writeTools: {
    Write: ['file_path'],
    Edit: ['file_path'],
    MultiEdit: ['file_path'],
    NotebookEdit: ['notebook_path'],
  },
  patchTools: [],
  blockStop: (reason) => ({ exitCode: 0, stdout: `${JSON.stringify({ decision: 'block', reason })}\n` }),
};
