import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import {
  connect,
  EVENTS,
  eachInstall,
  FILES,
  hookCommandFor,
  ourGroups,
  parsed,
  RUNTIME_NAMES,
  read,
  sandbox,
  snapshot,
} from '../helpers/connect.js';
import { CLI } from '../helpers/paths.js';

/**
 * A second `harness connect` changes nothing: every file byte-identical, no backup, and it says
 * "already installed". An entry of ours from an older install path (the same `hook <runtime>`, another
 * entry) is replaced where it stands, never duplicated; so is an older MCP registration. Needs
 * `npm run build`.
 */

eachInstall('connecting twice changes nothing the second time', async (t, s, runtime, scope) => {
  const first = await connect(s, runtime, scope);
  t.equal(first.code, 0, first.stderr);
  const after = await snapshot(s.root);
  const second = await connect(s, runtime, scope);
  t.equal(second.code, 0, second.stderr);
  t.match(second.stdout, /^already installed: nothing changed$/m);
  t.same(await snapshot(s.root), after, 'every file byte-identical, no backup made');
});

const OLD_ENTRY = '/old/checkout/dist/src/cli/main.cjs';

for (const runtime of RUNTIME_NAMES)
  t.test(`${runtime}: an entry of an older install path is replaced, not duplicated`, async (t) => {
    const s = await sandbox(t, runtime);
    const { hooks, mcp } = FILES[runtime].project;
    const events = EVENTS[runtime];
    const old = `/usr/local/bin/node ${OLD_ENTRY} hook ${runtime}`;
    // The runtime's own groups, then our old entry under the first event, and under the last one
    // sharing a group with someone else's hook.
    const value = parsed(hooks, await read(s, hooks));
    value['hooks'][events[0]!] = [{ hooks: [{ type: 'command', command: old, timeout: 5 }] }];
    value['hooks'][events[3]!] = [
      {
        hooks: [
          { type: 'command', command: 'keep-me' },
          { type: 'command', command: old },
        ],
      },
    ];
    await writeFile(join(s.root, hooks), JSON.stringify(value, null, 2));
    const oldServer = { command: '/usr/local/bin/node', args: [OLD_ENTRY, 'mcp'] };
    if (mcp.endsWith('.toml'))
      await writeFile(
        join(s.root, mcp),
        `${await read(s, mcp)}\n[mcp_servers.harness]\ncommand = "${oldServer.command}"\nargs = ["${OLD_ENTRY}", "mcp"]\n`,
      );
    else if (mcp !== hooks)
      await writeFile(join(s.root, mcp), JSON.stringify({ mcpServers: { harness: oldServer } }));
    else {
      const v = parsed(hooks, await read(s, hooks));
      v['mcpServers']['harness'] = oldServer;
      await writeFile(join(s.root, hooks), JSON.stringify(v, null, 2));
    }

    const r = await connect(s, runtime, 'project');
    t.equal(r.code, 0, r.stderr);
    const a = parsed(hooks, await read(s, hooks));
    for (const event of events) {
      const ours = ourGroups(a, event, runtime);
      t.equal(ours.length, 1, `${event}: one group of ours`);
      t.same(
        ours[0].hooks.map((h: any) => h.command),
        [hookCommandFor(runtime)],
        `${event}: the current command only`,
      );
    }
    t.equal(a['hooks'][events[0]!].length, 1, 'the old group was replaced where it stood');
    t.same(
      a['hooks'][events[3]!][0],
      { hooks: [{ type: 'command', command: 'keep-me' }] },
      'the other hook stays',
    );
    const m = parsed(mcp, await read(s, mcp));
    t.same((m['mcpServers'] ?? m['mcp_servers'])['harness'], {
      command: process.execPath,
      args: [CLI, 'mcp'],
    });
    t.notMatch(await read(s, hooks), OLD_ENTRY, 'no trace of the old path in the hooks');
    t.notMatch(await read(s, mcp), OLD_ENTRY, 'nor in the MCP registration');
  });
