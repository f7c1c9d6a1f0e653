import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { COMMIT_NAMES_MAX, DOCUMENT_MAX_BYTES, NAMED_PATHS_MAX } from '../../src/contract/index.js';
import { loadJson } from '../../src/validators/documents.js';
import { artifactRefPaths, commitNames } from '../../src/validators/json-scan.js';
import { DocumentRefsCache } from '../../src/workers/document-cache.js';
import { documentRefsHere, scanDocument } from '../../src/workers/document-refs.js';
import { refsOfText } from '../../src/workers/json-refs.js';
import { HashPool } from '../../src/workers/pool.js';
import run from '../../src/workers/tasks.js';

/**
 * The pool-thread side of the document references (called directly: coverage does not see worker
 * threads) gives exactly what loadJson + artifactRefPaths + commitNames gave on the main thread,
 * bounded; the main-thread cache of those references is an LRU bounded in entries and bytes.
 */
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const commit = (i: number) => i.toString(16).padStart(40, 'a');
const ref = (path: string) => ({ path, sha256: sha(path) });

async function root(t: Test) {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'hb-docrefs-')));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'run'));
  return dir;
}

t.test('a document names what a parse on the main thread named', async (t) => {
  const dir = await root(t);
  const doc = {
    schema: 'harness.run-packet.v3',
    artifacts: [ref('a.txt'), ref('b/c.md'), ref('a.txt')],
    nested: { deeper: [{ inventory: [ref('d.json')] }] },
    commits: { pre: commit(1), post: commit(2) },
  };
  const text = JSON.stringify(doc);
  await writeFile(join(dir, 'run/packet.json'), text);
  const loaded = await loadJson(dir, 'run/packet.json');
  if (loaded.kind !== 'ok') throw new Error('fixture');
  const scan = scanDocument(dir, 'run/packet.json', new Set());
  t.equal(scan.sha256, sha(text));
  t.same(scan.refs, { paths: artifactRefPaths(loaded.value).sort(), commits: commitNames(loaded.value) });
  t.same(scan.refs?.paths, ['a.txt', 'b/c.md', 'd.json'], 'sorted, each once');
  t.same(run({ op: 'document-refs', root: dir, path: 'run/packet.json', known: [] }), scan, 'the task');
  t.same(
    scanDocument(dir, 'run/packet.json', new Set([sha(text)])),
    { path: 'run/packet.json', sha256: sha(text), refs: null },
    'bytes whose digest the caller knows are hashed, not parsed',
  );
  t.same(await documentRefsHere(dir, ['run/packet.json']), [{ ...scan.refs, sha256: sha(text) }]);
});

t.test('missing, unreadable, over-size and invalid documents name nothing', async (t) => {
  const dir = await root(t);
  const nothing = { paths: [], commits: [] };
  t.same(scanDocument(dir, 'run/packet.json', new Set()), {
    path: 'run/packet.json',
    sha256: null,
    refs: nothing,
  });
  await writeFile(join(dir, 'run/bad.json'), '{"path": "x", "sha256": ');
  t.same(scanDocument(dir, 'run/bad.json', new Set()).refs, nothing, 'not JSON');
  t.equal(scanDocument(dir, 'run/bad.json', new Set()).sha256, sha('{"path": "x", "sha256": '));
  const big = Buffer.alloc(DOCUMENT_MAX_BYTES + 1, ' ');
  big.write(JSON.stringify(ref('far.txt')));
  await writeFile(join(dir, 'run/big.json'), big);
  t.same(
    scanDocument(dir, 'run/big.json', new Set()),
    { path: 'run/big.json', sha256: sha(big), refs: nothing },
    'too large to parse: names nothing, but says which bytes it read',
  );
  t.equal((await loadJson(dir, 'run/big.json')).kind, 'error', 'as loadJson refused it');
  await writeFile(join(dir, 'real.json'), JSON.stringify(ref('x')));
  await symlink(join(dir, 'real.json'), join(dir, 'run/link.json'));
  t.same(scanDocument(dir, 'run/link.json', new Set()).refs, nothing, 'a link is not followed');
  t.same(scanDocument(dir, '../escape.json', new Set()).refs, nothing, 'an escaping path');
});

t.test('the references crossing back are bounded', async (t) => {
  const dir = await root(t);
  // The most paths one document within DOCUMENT_MAX_BYTES names: all of them cross back.
  const short = Array.from({ length: 300_000 }, (_, i) => ({ path: i.toString(36), sha256: '' }));
  const text = JSON.stringify(short);
  t.ok(Buffer.byteLength(text) <= DOCUMENT_MAX_BYTES, `${Buffer.byteLength(text)} bytes`);
  await writeFile(join(dir, 'run/many.json'), text);
  t.equal(scanDocument(dir, 'run/many.json', new Set()).refs?.paths?.length, short.length);
  t.ok(NAMED_PATHS_MAX > short.length, 'under NAMED_PATHS_MAX');
  // Past the bound (NAMED_PATHS_MAX, or the one given): null, not the paths.
  t.equal(refsOfText(text, short.length - 1)?.paths, null, 'past the bound: null');
  t.equal(refsOfText(text, short.length)?.paths?.length, short.length);
  const commits = Array.from({ length: 10 }, (_, i) => commit(i));
  await writeFile(join(dir, 'run/commits.json'), JSON.stringify({ commits }));
  t.same(
    scanDocument(dir, 'run/commits.json', new Set()).refs?.commits,
    commits.slice(0, COMMIT_NAMES_MAX + 1),
    'one commit name past the bound, enough to refuse',
  );
});

t.test('the digest cache: least recently used out, bounded in entries and bytes', async (t) => {
  const refs = (...paths: string[]) => ({ paths, commits: [] });
  const c = new DocumentRefsCache(2, 20_000);
  c.set('a', refs('x'));
  c.set('b', refs('y'));
  t.same(c.get('a'), refs('x'));
  c.set('c', refs('z'));
  t.same(c.digests().sort(), ['a', 'c'], 'b, least recently used, left');
  t.equal(c.get('b'), undefined);
  t.same(c.stats, { parsed: 3, hits: 1 });
  c.set('big', refs('q'.repeat(9900)));
  t.same(c.digests(), ['c', 'big'], 'the byte bound pushes out the oldest entry');
  c.set('huge', refs('q'.repeat(20_000)));
  t.equal(c.get('huge'), undefined, 'an entry larger than the bound is not kept');
  t.equal(c.size, 2);
  c.set('big', refs('r'));
  t.same(c.get('big'), refs('r'), 'a digest set again replaces its entry');
  t.equal(c.size, 2);
});

t.test('the pool parses a document once, and again only if its entry left meanwhile', async (t) => {
  const dir = await root(t);
  const pool = new HashPool(1);
  t.teardown(() => pool.close());
  const packet = JSON.stringify({ a: { path: 'a.txt', sha256: 'x' } });
  await writeFile(join(dir, 'run/packet.json'), packet);
  const paths = ['run/packet.json', 'run/none.json'];
  const want = [
    { paths: ['a.txt'], commits: [], sha256: sha(packet) },
    { paths: [], commits: [], sha256: null },
  ];
  t.same(await pool.documentRefs(dir, paths), want);
  t.same(pool.documents.stats, { parsed: 1, hits: 0 }, 'a missing document is not cached');
  t.same(await pool.documentRefs(dir, paths), want);
  t.same(pool.documents.stats, { parsed: 1, hits: 1 });
  // The entry leaves the cache while the task runs: the document is parsed after all.
  const get = pool.documents.get.bind(pool.documents);
  pool.documents.get = () => undefined;
  t.same(await pool.documentRefs(dir, paths), want);
  pool.documents.get = get;
  t.same(pool.documents.stats, { parsed: 2, hits: 1 });
});

t.test('references are read without a parse, and exactly as JSON.parse reads the text', async (t) => {
  const same = (text: string, why: string) => {
    let want: unknown = null;
    try {
      const v = JSON.parse(text);
      want = { paths: artifactRefPaths(v).sort(), commits: commitNames(v).slice(0, COMMIT_NAMES_MAX + 1) };
    } catch {
      // not JSON: nothing
    }
    t.same(refsOfText(text), want, why);
  };
  const c = commit(7);
  same(`{"p\\u0061th":"a\\n\\u00e9\\ud800","sha256":"","x":["${c}",{"path":"b","sha256":1}]}`, 'escapes');
  same('{"path":"a","sha256":"","path":2}', 'a repeated member: the last value');
  same('{"path":"a","sha256":"x","sha256":null}', 'a repeated sha256: the last value');
  same('[{"path":"a","sha256":"x"},[{"path":"b","sha256":"y","deep":{"path":"c","sha256":"z"}}]]', 'nested');
  same(` \t\n{"__proto__":{"path":"p","sha256":"s"}} `, '__proto__ is a member like any other');
  same(`"${c}"`, 'a bare string');
  for (const bad of [
    '',
    '{',
    '{"a":1,}',
    '[1,]',
    '01',
    '{"a" 1}',
    '"\u0001"',
    '"\\q"',
    '\ufeff{}',
    '{}x',
    'nul',
  ])
    same(bad, `not JSON: ${JSON.stringify(bad)}`);
  // The earlier value of a repeated member is dropped by JSON.parse; its references are kept.
  t.same(refsOfText('{"x":{"path":"gone","sha256":""},"x":1}')?.paths, ['gone'], 'stricter than a parse');
});
