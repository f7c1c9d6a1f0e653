import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildUiServer } from '../../src/ui/server.js';
import { json, startRecordingUpstream } from '../helpers/recording-upstream.js';
import { ACCESS_TOKEN, SECURITY_HEADERS, startUi } from '../helpers/ui-server.js';

const root = await mkdtemp(join(tmpdir(), 'harness-ui-static-'));
const web = join(root, 'web');
await mkdir(join(web, 'assets'), { recursive: true });
await writeFile(join(web, 'index.html'), '<!doctype html><title>t</title>');
await writeFile(join(web, 'assets', 'app-abc123.js'), 'console.log(1)');
await writeFile(join(web, 'notes.txt'), 'not a served type');
await writeFile(join(root, 'secret.json'), '{"secret":true}');
await symlink(join(root, 'secret.json'), join(web, 'linked.json'));
// A linked directory is skipped as a linked file is: its files are outside the build.
await mkdir(join(root, 'outside'));
await writeFile(join(root, 'outside', 'secret.json'), '{"secret":true}');
await symlink(join(root, 'outside'), join(web, 'linkdir'));
// A web root with assets but no index.html is not a build: nothing of it is served.
await mkdir(join(root, 'no-index', 'assets'), { recursive: true });
await writeFile(join(root, 'no-index', 'assets', 'old.js'), 'old');
const upstream = await startRecordingUpstream(json(200, { ok: true }));
const ui = await startUi(upstream.url, { webRoot: web });
const unbuilt = await startUi(upstream.url, { webRoot: join(root, 'missing') });
const noIndex = await startUi(upstream.url, { webRoot: join(root, 'no-index') });
t.teardown(async () => {
  await ui.app.close();
  await unbuilt.app.close();
  await noIndex.app.close();
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

t.test('the exact CSP and same-origin headers on the app, its assets, the proxy and errors', async (t) => {
  for (const path of ['/', '/assets/app-abc123.js', '/api/bridge/health', '/notes.txt']) {
    const res = await ui.get(path);
    t.equal(res.status, path === '/notes.txt' ? 404 : 200, path);
    t.has(res.headers, SECURITY_HEADERS, path);
  }
});

t.test('only the files of the build are reachable: no traversal, no links, no other types', async (t) => {
  for (const path of [
    '/../secret.json',
    '/%2e%2e/secret.json',
    '/assets/..%2F..%2Fsecret.json',
    '/linked.json',
    '/linkdir/secret.json',
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

t.test('a web root without index.html is not a build: 503 at /, nothing else served', async (t) => {
  t.equal((await noIndex.get('/')).status, 503);
  const asset = await noIndex.get('/assets/old.js');
  t.equal(asset.status, 404);
  t.equal(asset.json()['error'], 'not_found');
});

t.test('a build past 200 files is refused at startup', async (t) => {
  const many = join(root, 'many');
  await mkdir(many);
  await writeFile(join(many, 'index.html'), 'x');
  for (let i = 0; i < 200; i++) await writeFile(join(many, `f${i}.js`), '1');
  const options = { host: '127.0.0.1', bridgeUrl: upstream.url, accessToken: ACCESS_TOKEN, timeoutMs: 1000 };
  await t.rejects(buildUiServer({ ...options, webRoot: many }), { message: /too large/ });
  await rm(join(many, 'f0.js'));
  const app = await buildUiServer({ ...options, webRoot: many });
  t.teardown(() => app.close());
  t.pass('200 files are served');
});
