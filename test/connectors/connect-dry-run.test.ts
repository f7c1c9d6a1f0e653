import { connect, eachInstall, snapshot } from '../helpers/connect.js';

/**
 * `harness connect --dry-run` shows each change as a diff and writes nothing: no file, no backup,
 * no connector.json, with or without --remove. Needs `npm run build`.
 */

eachInstall('--dry-run shows the change and writes nothing', async (t, s, runtime, scope) => {
  const before = await snapshot(s.root);
  const r = await connect(s, runtime, scope, '--dry-run');
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /\(dry run: nothing written\)/);
  t.match(r.stdout, /^would be (changed|created): /m);
  t.match(r.stdout, new RegExp(`^\\+.*main\\.cjs.* hook ${runtime}`, 'm'), 'the diff shows our hook command');
  t.match(r.stdout, /^\+.*"schema": "harness\.connector\.v1"/m, 'and the connector.json it would create');
  t.same(await snapshot(s.root), before, 'nothing written');

  t.equal((await connect(s, runtime, scope)).code, 0);
  const installed = await snapshot(s.root);
  const rm = await connect(s, runtime, scope, '--remove', '--dry-run');
  t.equal(rm.code, 0, rm.stderr);
  t.match(rm.stdout, new RegExp(`^-.*main\\.cjs.* hook ${runtime}`, 'm'), 'the diff shows our hook going');
  t.same(await snapshot(s.root), installed, 'nothing removed');
});
