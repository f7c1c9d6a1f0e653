import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { ROOT } from './helpers/paths.js';

/**
 * The hash/verify worker threads start with the bridge and with every validator child, and each
 * thread loads its own module graph. Loading TypeBox (about 700 modules) or execa there cost more
 * than a small claim's whole hashing, so the worker entry must reach only Node's built-ins and the
 * project's own modules. Walked over the built JavaScript, where type-only imports are erased.
 */
function moduleGraph(entry: string) {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g)) {
      const spec = m[1]!;
      if (spec.startsWith('node:')) continue;
      if (spec.startsWith('.')) pending.push(resolve(dirname(file), spec));
      else packages.add(spec);
    }
  }
  return { files: [...seen].map((f) => relative(ROOT, f)), packages: [...packages] };
}

t.test('the worker entry imports no package, only built-ins and project modules', async (t) => {
  const graph = moduleGraph(join(ROOT, 'dist/src/workers/tasks.js'));
  t.ok(
    graph.files.includes('dist/src/validators/artifact-open-sync.js'),
    'the walk follows relative imports',
  );
  t.same(graph.packages, [], `packages reached: ${graph.packages.join(', ')}`);
  t.notOk(
    graph.files.some((f) => f.startsWith('dist/src/contract/') && !/\/(limits|artifact-path)\.js$/.test(f)),
    `contract modules reached: ${graph.files.filter((f) => f.includes('/contract/')).join(', ')}`,
  );
});

t.test('the walk sees a package import when there is one', async (t) => {
  const graph = moduleGraph(join(ROOT, 'dist/src/validators/git.js'));
  t.ok(graph.packages.includes('execa'), 'git.js reaches execa');
});
