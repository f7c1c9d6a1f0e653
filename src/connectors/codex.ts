import { claudeCode } from './claude-code.js';
import type { RuntimeTable } from './table.js';

/**
 * OpenAI Codex CLI (the seed's runtime-b). Its hooks take Claude Code's events, payloads and
 * answers; the files, the tools it hooks and where its MCP servers live differ.
 */
export const codex: RuntimeTable = {
  ...claudeCode,
  name: 'codex',
  label: 'Codex CLI',
  actor: 'runtime-b',
  hooksFile: {
    project: { scope: 'project', path: '.codex/hooks.json', format: 'json' },
    user: { scope: 'user', path: '.codex/hooks.json', format: 'json' },
  },
  // Codex reads MCP servers from the user's config only.
  mcpFile: {
    project: { scope: 'user', path: '.codex/config.toml', format: 'toml' },
    user: { scope: 'user', path: '.codex/config.toml', format: 'toml' },
  },
  otherConfigFiles: [],
  installNote:
    "Codex loads a project's .codex/hooks.json only when the project is trusted; hooks are on by default in current versions (older ones need `[features] codex_hooks = true` in ~/.codex/config.toml)",
  shellTools: ['Bash', 'shell', 'local_shell'],
  writeTools: {},
  patchTools: ['apply_patch'],
};
