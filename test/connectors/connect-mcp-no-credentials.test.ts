import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { secret } from '../helpers/bridge.js';
import { connect, eachInstall, FILES, parsed, read } from '../helpers/connect.js';

/**
 * SPEC Authentication: no credential is ever written into a runtime's configuration. connect runs
 * with all three credentials in its environment and agent.env beside them; no file it writes (hooks,
 * MCP registration, connector.json, backups) holds any of their values, and the MCP entry is exactly
 * `{command, args}`, no `env`. connector.json names agent.env by path. Needs `npm run build`.
 */

const CREDENTIALS = [
  'HARNESS_BRIDGE_ACCESS_TOKEN',
  'HARNESS_HUMAN_APPROVAL_TOKEN',
  'HARNESS_BRIDGE_INTEGRITY_KEY',
];

eachInstall('no credential in any file connect writes', async (t, s, runtime, scope) => {
  for (const name of CREDENTIALS) s.env[name] = secret();
  const agentEnv = join(s.home, '.harness', 'dev', 'agent.env');
  await mkdir(join(s.home, '.harness', 'dev'), { recursive: true });
  await writeFile(agentEnv, `HARNESS_BRIDGE_ACCESS_TOKEN=${s.env['HARNESS_BRIDGE_ACCESS_TOKEN']}\n`, {
    mode: 0o600,
  });
  t.equal((await connect(s, runtime, scope)).code, 0);
  t.equal((await connect(s, runtime, scope, '--remove')).code, 0, 'and a remove, for the backups');
  t.equal((await connect(s, runtime, scope)).code, 0);

  let scanned = 0;
  for (const entry of await readdir(s.root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (!entry.isFile() || path === agentEnv) continue;
    const text = await readFile(path, 'utf8');
    for (const name of CREDENTIALS)
      t.notOk(text.includes(s.env[name]!), `${relative(s.root, path)} holds no ${name}`);
    scanned++;
  }
  t.ok(scanned >= 4, `${scanned} files scanned`);
  const { mcp } = FILES[runtime][scope];
  const m = parsed(mcp, await read(s, mcp));
  t.same(Object.keys((m['mcpServers'] ?? m['mcp_servers'])['harness']).sort(), ['args', 'command'], 'no env');
  const connector = scope === 'user' ? 'home/.harness/connector.json' : 'project/.harness/connector.json';
  t.equal(JSON.parse(await read(s, connector)).tokenFile, agentEnv, 'connector.json names agent.env by path');
});
