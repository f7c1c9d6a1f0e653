import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/paths.js';

/**
 * No import cycle under src/: dependencies point one way (docs/architecture.md), so each module
 * can be read, tested, moved or split after the ones it imports. Two graphs are walked.
 *
 * - The built JavaScript (every .js file under dist/src), what Node links and evaluates. A cycle
 *   there lets a module run while one it imports is only half evaluated (a `const` read in its
 *   temporal dead zone, a class still undefined), depending on which entry happened to load first.
 * - The TypeScript sources (every .ts and .tsx file under src), `import type` included. Type-only
 *   imports are erased from the build, so a cycle closed by one never shows in dist/ (both cycles
 *   of issue 33 were: journal -> commit-log -> commit-log-replay -> journal, and runner ->
 *   finish-line -> the rules -> git -> runner), yet it ties the modules together just the same.
 *
 * A dynamic `import('./x.js')` is an edge in both. Loading on demand (the CLI loads a command's
 * module only when that command runs) cannot leave a module half evaluated, but the importing
 * module still depends on the other: an import made lazy to get past this test would hide a
 * cycle, not give its modules a direction. No dynamic import under src/ closes a cycle.
 */

/** Relative specifiers: `import`/`export ... from`, a bare `import './x.js'`, and `import('./x.js')`. */
const RELATIVE_IMPORT =
  /(?:^\s*(?:import|export)\b[^'";]*?\bfrom\s*|^\s*import\s*|\bimport\s*\(\s*)['"](\.\.?\/[^'"]+)['"]/gm;

function relativeImports(source: string): string[] {
  return [...source.matchAll(RELATIVE_IMPORT)].map((m) => m[1]!);
}

type Graph = ReadonlyMap<string, readonly string[]>;

/**
 * Each module under `dir` (named relative to the repository root) with the modules it imports,
 * and every relative import that names no module of the graph: an edge the walk could not check.
 */
function importGraph(
  dir: string,
  isModule: (name: string) => boolean,
  candidates: (target: string) => string[],
) {
  const base = join(ROOT, dir);
  const files = readdirSync(base, { recursive: true, encoding: 'utf8' })
    .filter(isModule)
    .map((name) => join(base, name));
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  const unresolved: string[] = [];
  for (const file of files) {
    const edges: string[] = [];
    for (const spec of relativeImports(readFileSync(file, 'utf8'))) {
      // Code is imported as `.js` (NodeNext resolution); a stylesheet imports no module back.
      if (!spec.endsWith('.js')) continue;
      const found = candidates(resolve(dirname(file), spec)).find((c) => known.has(c));
      if (found === undefined) unresolved.push(`${relative(ROOT, file)} imports ${spec}`);
      else edges.push(relative(ROOT, found));
    }
    graph.set(relative(ROOT, file), edges);
  }
  return { graph, unresolved };
}

/**
 * One cycle for each back edge of a depth-first walk, as the path that closes it (`a -> b -> a`):
 * a graph has a cycle exactly when the walk meets a back edge, so none is missed, and each
 * tangle shows at least one of its cycles by name.
 */
function cyclesOf(graph: Graph): string[] {
  const done = new Set<string>();
  const path: string[] = [];
  const cycles: string[] = [];
  const visit = (node: string): void => {
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const at = path.indexOf(next);
      if (at >= 0) cycles.push([...path.slice(at), next].join(' -> '));
      else if (!done.has(next)) visit(next);
    }
    path.pop();
    done.add(node);
  };
  for (const node of [...graph.keys()].sort()) if (!done.has(node)) visit(node);
  return cycles;
}

const edgeCount = (graph: Graph) => [...graph.values()].reduce((n, edges) => n + edges.length, 0);

/** `'a:b,c b:c c:'` is a graph where a imports b and c, b imports c, and c imports nothing. */
const graphOf = (text: string): Graph =>
  new Map(
    text.split(' ').map((entry) => {
      const [from, to] = entry.split(':') as [string, string];
      return [from, to === '' ? [] : to.split(',')];
    }),
  );

t.test('the walk reads every form of relative import, and only relative ones', async (t) => {
  const source = [
    "import { a } from './a.js';",
    "import type { B } from '../b.js';",
    'import {',
    '  c,',
    '  type C,',
    "} from './c.js';",
    "export { d } from './d.js';",
    "export * from './e.js';",
    "import './f.js';",
    "const g = await import('./g.js');",
    "import { h } from '#typebox';",
    "import { join } from 'node:path';",
    "const text = 'nothing from here';",
  ].join('\n');
  t.same(relativeImports(source), ['./a.js', '../b.js', './c.js', './d.js', './e.js', './f.js', './g.js']);
});

t.test('a cycle is found and named by its path', async (t) => {
  t.same(cyclesOf(graphOf('a:b b:c c:')), [], 'a chain is not a cycle');
  t.same(cyclesOf(graphOf('a:b,c b:c c:')), [], 'nor is a diamond');
  t.same(cyclesOf(graphOf('a:b b:c c:a')), ['a -> b -> c -> a']);
  t.same(cyclesOf(graphOf('x:y y:z z:y')), ['y -> z -> y'], 'only the loop, not the path into it');
  t.same(cyclesOf(graphOf('a:a')), ['a -> a'], 'a module importing itself');
});

const WALKS = [
  {
    name: 'the built modules import each other without a cycle, dynamic imports included',
    walk: () =>
      importGraph(
        'dist/src',
        (name) => name.endsWith('.js'),
        (target) => [target],
      ),
  },
  {
    name: 'the sources import each other without a cycle, type-only imports included',
    walk: () =>
      importGraph(
        'src',
        (name) => /\.tsx?$/.test(name) && !name.endsWith('.d.ts'),
        (target) => [target.replace(/\.js$/, '.ts'), target.replace(/\.js$/, '.tsx')],
      ),
  },
];

for (const { name, walk } of WALKS) {
  t.test(name, async (t) => {
    const { graph, unresolved } = walk();
    t.ok(
      graph.size > 100 && edgeCount(graph) > 300,
      `the walk read ${graph.size} modules, ${edgeCount(graph)} imports`,
    );
    t.same(unresolved, [], 'every relative import of code names a module of the graph');
    t.same(cyclesOf(graph), [], 'no import cycle (each listed as the path that closes it)');
  });
}
