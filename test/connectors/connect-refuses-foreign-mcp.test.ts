import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { connect, FILES, parsed, RUNTIME_NAMES, read, sandbox, snapshot } from '../helpers/connect.js';

/**
 * An MCP server named `harness` that is not `harness mcp` is someone's configuration: connect
 * refuses (exit 2) and writes nothing, and --remove leaves it where it is. Needs `npm run build`.
 */

const FOREIGN = { command: 'npx', args: ['-y', 'harness-other-server'] };

for (const runtime of RUNTIME_NAMES)
  t.test(`${runtime}: a foreign "harness" MCP server is not overwritten`, async (t) => {
    const s = await sandbox(t, runtime);
    const { mcp } = FILES[runtime].project;
    if (mcp.endsWith('.toml'))
      await writeFile(
        join(s.root, mcp),
        `${await read(s, mcp)}\n[mcp_servers.harness]\ncommand = "npx"\nargs = ["-y", "harness-other-server"]\n`,
      );
    else {
      const v = parsed(mcp, await read(s, mcp));
      v['mcpServers'] = { ...v['mcpServers'], harness: FOREIGN };
      await writeFile(join(s.root, mcp), JSON.stringify(v, null, 2));
    }
    const before = await snapshot(s.root);
    const r = await connect(s, runtime, 'project');
    t.equal(r.code, 2, r.stderr);
    t.match(r.stderr, join(s.root, mcp));
    t.match(r.stderr, /MCP server "harness" is not `harness mcp`/);
    t.same(await snapshot(s.root), before, 'nothing written, no backup');
    const rm = await connect(s, runtime, 'project', '--remove');
    t.equal(rm.code, 0, rm.stderr);
    const m = parsed(mcp, await read(s, mcp));
    t.same((m['mcpServers'] ?? m['mcp_servers'])['harness'], FOREIGN, '--remove leaves it');
  });
