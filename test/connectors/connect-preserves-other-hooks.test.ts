import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  connect,
  EVENTS,
  eachInstall,
  FILES,
  FIXTURES,
  hookCommandFor,
  ourGroups,
  parsed,
  read,
} from '../helpers/connect.js';
import { CLI } from '../helpers/paths.js';

/**
 * `harness connect` adds its entries and leaves every other hook and setting as it was: each line of
 * the file before is still there, in order, as it was (a comma added after the entry it now follows
 * aside), comments included; every value but ours parses the same; our group is appended after the
 * runtime's own. Codex's config.toml is only appended to. Needs `npm run build`.
 */

/** Each line of `before` appears in `after` in the same order, unchanged or with a comma added. */
function linesKept(before: string, after: string): string | null {
  const lines = after.split('\n');
  let at = 0;
  for (const line of before.split('\n')) {
    const found = lines.findIndex(
      (l, i) => i >= at && (l === line || l === `${line},` || l === line.replace(/( *\/\/.*)$/, ',$1')),
    );
    if (found < 0) return line;
    at = found + 1;
  }
  return null;
}

eachInstall('other hooks and settings stay as they were', async (t, s, runtime, scope) => {
  const { hooks, mcp } = FILES[runtime][scope];
  const fixture = (rel: string) => readFile(join(FIXTURES, runtime, rel), 'utf8');
  const r = await connect(s, runtime, scope);
  t.equal(r.code, 0, r.stderr);

  const before = await fixture(hooks);
  const after = await read(s, hooks);
  t.equal(linesKept(before, after), null, 'every line of the hooks file is kept, in order');
  const b = parsed(hooks, before);
  const a = parsed(hooks, after);
  for (const event of EVENTS[runtime]) {
    const old: unknown[] = b['hooks']?.[event] ?? [];
    t.same(
      a['hooks'][event].slice(0, old.length),
      old,
      `${event}: the runtime's own groups first, unchanged`,
    );
    t.equal(a['hooks'][event].length, old.length + 1, `${event}: one group added`);
    const [ours] = ourGroups(a, event, runtime);
    t.equal(ours.hooks[0].command, hookCommandFor(runtime), `${event}: our command`);
  }
  const strip = (v: Record<string, any>) => {
    const { hooks: h, mcpServers, mcp_servers, ...rest } = v;
    return rest;
  };
  t.same(strip(a), strip(b), 'every other setting parses the same');
  for (const [event, groups] of Object.entries(b['hooks'] ?? {}))
    if (!EVENTS[runtime].includes(event)) t.same(a['hooks'][event], groups, `${event} untouched`);

  if (mcp !== hooks) {
    const mb = await fixture(mcp);
    const ma = await read(s, mcp);
    const server = JSON.stringify({ command: process.execPath, args: [CLI, 'mcp'] });
    if (mcp.endsWith('.toml'))
      t.ok(ma.startsWith(mb), 'config.toml: the user text is a prefix, ours appended');
    // A one-line file (~/.claude.json) keeps its one line: ours is inserted in it, compact.
    else if (mb.trim().split('\n').length === 1)
      t.equal(ma.replace(`,"harness":${server}`, ''), mb, 'the one line is kept, ours inserted');
    else t.equal(linesKept(mb, ma), null, 'every line of the MCP file is kept, in order');
  }
  const servers = (v: Record<string, any>) => v['mcpServers'] ?? v['mcp_servers'];
  const mb = servers(parsed(mcp, await fixture(mcp)));
  const ma = servers(parsed(mcp, await read(s, mcp)));
  const { harness, ...others } = ma;
  t.same(others, mb ?? {}, 'the other MCP servers parse the same');
  t.same(harness, { command: process.execPath, args: [CLI, 'mcp'] }, 'our MCP server');
});
