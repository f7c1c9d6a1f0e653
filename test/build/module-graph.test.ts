import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/paths.js';

/**
 * What each process and thread loads at start, walked over the built JavaScript (where type-only
 * imports are erased). The hash/verify worker threads start with the bridge and with every
 * validator child, each loading its own module graph: they must reach only Node's built-ins and
 * the project's own modules. And nothing may load the `typebox` package's ~700 modules or
 * `execa`'s ~100: the code uses the bundles behind `#typebox` and `#execa`
 * (scripts/bundle-vendor.mjs).
 */
function moduleGraph(entry: string, { dynamic = true } = {}) {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    const spec = dynamic
      ? /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g
      : /(?:\bfrom\s*|\bimport\s*)['"]([^'"]+)['"]/g;
    for (const m of source.matchAll(spec)) {
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
  t.ok(graph.packages.includes('#execa'), 'git.js reaches execa');
});

t.test('no entry loads typebox, execa or secretlint themselves, only their bundles', async (t) => {
  const graphs = new Map(
    ['cli/main.cjs', 'validators/child.js', 'workers/tasks.js', 'ui/server.js'].map((entry) => [
      entry,
      moduleGraph(join(ROOT, 'dist/src', entry)),
    ]),
  );
  for (const [entry, graph] of graphs) {
    const direct = graph.packages.filter((p) => /^(typebox|execa|@secretlint)(\/|$)/.test(p));
    t.same(direct, [], `${entry} imports ${direct.join(', ') || 'no such package directly'}`);
  }
  const cli = graphs.get('cli/main.cjs')!;
  t.ok(cli.packages.includes('#typebox') && cli.packages.includes('#execa'), 'the CLI reaches both bundles');
  t.ok(cli.packages.includes('fastify'), 'the walk follows the commands it imports on demand');
  const { Type } = await import('#typebox');
  const { Compile } = await import('#typebox/compile');
  const check = Compile(Type.String({ format: 'date-time' }));
  t.ok(check.Check('2026-11-26T00:00:00Z') && !check.Check('yesterday'), 'the bundle checks formats');
});

t.test(
  'harness hook starts on a small graph: no commander, no schema compiler, no client library',
  async (t) => {
    const main = readFileSync(join(ROOT, 'dist/src/cli/main.cjs'), 'utf8');
    t.same(
      [...main.matchAll(/\brequire\(\s*['"]([^'"]+)['"]/g)].map((m) => m[1]),
      ['../../bundle/hook.cjs'],
      'the entry requires the hook bundle and nothing else; the program is imported only for other commands',
    );
    t.notMatch(main, /^import\s/m, 'and imports nothing statically');
    const bundle = readFileSync(join(ROOT, 'dist/bundle/hook.cjs'), 'utf8');
    t.same(
      [...bundle.matchAll(/\brequire\(\s*['"]([^'"]+)['"]/g)]
        .map((m) => m[1]!)
        .filter((m) => !m.startsWith('node:')),
      [],
      'the hook bundle requires only Node built-ins',
    );
    const graph = moduleGraph(join(ROOT, 'dist/src/cli/hook.js'));
    t.ok(graph.files.includes('dist/src/connectors/outbox.js'), 'the walk follows the engine');
    // picomatch is loaded only when a written path meets a Red Zone path rule.
    t.same(graph.packages, ['picomatch'], `packages reached: ${graph.packages.join(', ')}`);
    const foreign = graph.files.filter(
      (f) =>
        !f.startsWith('dist/src/connectors/') &&
        ![
          'dist/src/cli/hook.js',
          'dist/src/cli/env.js',
          // A leaf of constants: the credential names an agent-side process refuses.
          'dist/src/contract/agent-side.js',
          'dist/src/contract/limits.js',
          'dist/src/contract/loopback.js',
        ].includes(f),
    );
    t.same(foreign, [], `modules outside the connector reached: ${foreign.join(', ')}`);
    t.notOk(
      graph.files.includes('dist/src/connectors/install.js'),
      'the installer is not part of a hook call',
    );
    // What a tool call no Red Zone rule holds loads: the rest comes in only past that check.
    const quiet = moduleGraph(join(ROOT, 'dist/src/cli/hook.js'), { dynamic: false });
    t.ok(quiet.files.includes('dist/src/connectors/redzone.js'), 'the static walk reaches the rules');
    for (const late of ['session', 'outbox', 'bridge-client', 'state'])
      t.notOk(
        quiet.files.includes(`dist/src/connectors/${late}.js`),
        `${late}.js is loaded only when needed`,
      );
  },
);
