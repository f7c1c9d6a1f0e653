import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import {
  connect,
  EVENTS,
  eachInstall,
  FILES,
  FIXTURES,
  parsed,
  RUNTIME_NAMES,
  read,
  readOrNull,
  sandbox,
  snapshot,
} from '../helpers/connect.js';

/**
 * `harness connect --remove` takes out only our entries: a file that held other content before the
 * connect gets its original bytes back; connector.json stays, and it says so. A second remove
 * changes nothing. Needs `npm run build`.
 */

eachInstall('connect then --remove gives the original bytes back', async (t, s, runtime, scope) => {
  const { hooks, mcp } = FILES[runtime][scope];
  // An odd mode, to see it kept on the file and given to its backup.
  await chmod(join(s.root, hooks), 0o640);
  const installed = await connect(s, runtime, scope);
  t.equal(installed.code, 0, installed.stderr);
  t.equal((await stat(join(s.root, hooks))).mode & 0o777, 0o640, 'the hooks file keeps its mode');
  const backup = new RegExp(`^changed: ${join(s.root, hooks)} \\(backup (.*)\\)$`, 'm').exec(
    installed.stdout,
  )?.[1];
  t.ok(backup, 'the hooks file was backed up');
  t.equal(
    await readFile(backup!, 'utf8'),
    await readFile(join(FIXTURES, runtime, hooks), 'utf8'),
    'the backup holds the bytes before',
  );
  t.equal((await stat(backup!)).mode & 0o777, 0o640, 'with their mode');
  const r = await connect(s, runtime, scope, '--remove');
  t.equal(r.code, 0, r.stderr);
  for (const rel of new Set([hooks, mcp])) {
    const original = await readFile(join(FIXTURES, runtime, rel), 'utf8').catch(() => null);
    if (original !== null) t.equal(await read(s, rel), original, `${rel}: the original bytes`);
  }
  const connector = scope === 'user' ? 'home/.harness/connector.json' : 'project/.harness/connector.json';
  t.not(await readOrNull(s, connector), null, 'connector.json is left in place');
  t.match(r.stdout, /^left in place: .*connector\.json/m, 'and it says so');
  t.match(
    r.stdout,
    /^changed: .* \(backup .*\.harness-backup-\d{8}T\d{6}\.\d{3}Z\)$/m,
    'each change has a backup',
  );
  const before = await snapshot(s.root);
  const again = await connect(s, runtime, scope, '--remove');
  t.equal(again.code, 0, again.stderr);
  t.same(await snapshot(s.root), before, 'a second remove changes nothing');
});

for (const runtime of RUNTIME_NAMES)
  t.test(`${runtime}: --remove takes only our hook out of a group it shares`, async (t) => {
    const s = await sandbox(t, runtime);
    const { hooks } = FILES[runtime].project;
    t.equal((await connect(s, runtime, 'project')).code, 0);
    const v = parsed(hooks, await read(s, hooks));
    const event = EVENTS[runtime].find((e) => v['hooks'][e].length === 1)!;
    v['hooks'][event][0].hooks.unshift({ type: 'command', command: 'shared-tenant' });
    await writeFile(join(s.root, hooks), JSON.stringify(v, null, 2));
    t.equal((await connect(s, runtime, 'project', '--remove')).code, 0);
    const after = parsed(hooks, await read(s, hooks));
    t.same(
      after['hooks'][event],
      [
        {
          ...(v['hooks'][event][0].matcher ? { matcher: v['hooks'][event][0].matcher } : {}),
          hooks: [{ type: 'command', command: 'shared-tenant' }],
        },
      ],
      'the group stays with the other hook alone',
    );
  });

t.test('--remove where nothing was installed writes nothing', async (t) => {
  const s = await sandbox(t, 'claude-code');
  const before = await snapshot(s.root);
  const r = await connect(s, 'claude-code', 'project', '--remove');
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^not installed: nothing to remove$/m);
  t.same(await snapshot(s.root), before);
});
