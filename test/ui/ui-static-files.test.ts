import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { json, startRecordingUpstream } from '../helpers/recording-upstream.js';
import { startUi } from '../helpers/ui-server.js';

const root = await mkdtemp(join(tmpdir(), 'harness-ui-static-'));
const web = join(root, 'web');
await mkdir(join(web, 'assets'), { recursive: true });
await writeFile(join(web, 'index.html'), '<!doctype html><title>t</title>');
await writeFile(join(web, 'assets', 'app-abc123.js'), 'console.log(1)');
await writeFile(join(web, 'notes.txt'), 'not a served type');
await writeFile(join(root, 'secret.json'), '{"secret":true}');
await symlink(join(root, 'secret.json'), join(web, 'linked.json'));
const upstream = await startRecordingUpstream(json(200, { ok: true }));
const ui = await startUi(upstream.url, { webRoot: web });
const unbuilt = await startUi(upstream.url, { webRoot: join(root, 'missing') });
t.teardown(async () => {
  await ui.app.close();
  await unbuilt.app.close();
  await upstream.close();
  await rm(root, { recursive: true, force: true });
});

t.test('the app is served with a strict CSP and no framing', async (t) => {
  const res = await ui.get('/');
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8');
  t.match(
    res.headers['content-security-policy'],
    /default-src 'none'; script-src 'self'.*frame-ancestors 'none'/,
  );
  t.equal(res.headers['x-frame-options'], 'DENY');
  t.equal(res.headers['cache-control'], 'no-cache');
  const asset = await ui.get('/assets/app-abc123.js');
  t.equal(asset.text, 'console.log(1)');
  t.match(asset.headers['cache-control'], /immutable/);
});

t.test('only the files of the build are reachable: no traversal, no links, no other types', async (t) => {
  for (const path of [
    '/../secret.json',
    '/%2e%2e/secret.json',
    '/assets/..%2F..%2Fsecret.json',
    '/linked.json',
    '/notes.txt',
    '/assets',
    '/index.html/',
    '/package.json',
  ]) {
    const res = await ui.get(path);
    t.equal(res.status, 404, path);
    t.equal(res.json()['error'], 'not_found');
    t.notMatch(res.text, /secret/);
    t.equal(res.headers['cache-control'], 'no-store', `${path}: the error is not cached`);
  }
  const refused = await ui.get('/', { origin: 'http://evil.example' });
  t.equal(refused.status, 403);
  t.equal(refused.headers['cache-control'], 'no-store', 'nor is a refusal on the app route');
});

t.test('an unbuilt app says so at / and the proxy still works', async (t) => {
  const res = await unbuilt.get('/');
  t.equal(res.status, 503);
  t.match(res.text, /npm run build/);
  t.equal(res.headers['cache-control'], 'no-store', 'the notice is not cached past the build');
  t.equal((await unbuilt.get('/api/bridge/health')).status, 200);
});
