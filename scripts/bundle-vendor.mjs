// Bundles the dependencies that ship as many small ES modules into dist/vendor: `typebox`
// (about 700 modules), `execa` (about 100), `prom-client` (about 90 with its dependencies) and secretlint's core with its recommended rule preset
// (the finish-line validator child's secret scan). Loading them module by module was most of the
// start-up of every CLI command, validator child and bridge. The code imports them as `#typebox`,
// `#typebox/compile`, `#typebox/value`, `#execa`, `#prom-client` and `#secretlint` (package.json "imports"): types from the
// packages' own declarations (src/vendor), code from these bundles. `npm run build` runs this
// after tsc.
//
// It also bundles `harness hook` (src/cli/hook.ts and what it imports) into one CommonJS file,
// dist/bundle/hook.cjs, which the CommonJS entry (src/cli/main.cts) requires: a hook runs on every
// tool call of an agent, and one CommonJS file starts without the ESM loader or a module-by-module
// load (docs/performance.md, bench:hook). It is built from the sources, so tsc need not run first.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const common = {
  absWorkingDir: root,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
};
rmSync(`${root}dist/vendor`, { recursive: true, force: true });
// One chunk shared by the three entries, so there is one copy of TypeBox's format registry.
await build({
  ...common,
  entryPoints: { index: 'typebox', compile: 'typebox/compile', value: 'typebox/value' },
  splitting: true,
  outdir: `${root}dist/vendor/typebox`,
});
// execa's CommonJS dependencies (cross-spawn) require Node built-ins, which an ES module bundle
// can only do through a require of its own.
await build({
  ...common,
  entryPoints: { index: 'execa' },
  outdir: `${root}dist/vendor/execa`,
  banner: {
    js: "import { createRequire as vendorRequire } from 'node:module'; const require = vendorRequire(import.meta.url);",
  },
});
// secretlint 12's core marks the start and end of every rule on every file in the global
// performance timeline, and its profiler keeps each mark and searches all earlier ones at each
// end: the scan's cost per file grows with the files scanned before it (a review inventory of
// 2,000 files outran the validators' 120 s deadline). Nothing reads the profile (its CLI's
// --profile, which we do not use), so the profiler is replaced by one whose mark does nothing, as
// secretlint 13 does unless profiling is asked for (secretlint/secretlint#1673; 13 needs Node 22).
const noProfiler = {
  name: 'no-secretlint-profiler',
  setup(b) {
    b.onResolve({ filter: /^@secretlint\/profiler$/ }, () => ({
      path: 'profiler',
      namespace: 'no-profiler',
    }));
    b.onLoad({ filter: /.*/, namespace: 'no-profiler' }, () => ({
      contents: 'export const secretLintProfiler = { mark() {} };\n',
      loader: 'js',
    }));
  },
};
// One file, so the validator child loads the rule set at once and the runtime identity
// (src/server/runtime-identity.ts) covers the exact rules that judged a run. `debug` is
// CommonJS and requires Node built-ins, as cross-spawn does above.
await build({
  ...common,
  plugins: [noProfiler],
  stdin: {
    contents:
      "export { lintSource } from '@secretlint/core';\n" +
      "export { rules as recommendedRules } from '@secretlint/secretlint-rule-preset-recommend';\n",
    resolveDir: root,
    sourcefile: 'secretlint-entry.js',
  },
  outfile: `${root}dist/vendor/secretlint/index.js`,
  banner: {
    js: "import { createRequire as vendorRequire } from 'node:module'; const require = vendorRequire(import.meta.url);",
  },
});
// prom-client (the bridge's /metrics) is CommonJS spread over about 90 modules with its
// dependencies (tdigest, bintrees, @opentelemetry/api): one file loads in about half the time.
// Named exports, which an ES module bundle of a CommonJS package only has when listed.
await build({
  ...common,
  stdin: {
    contents: "export { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';\n",
    resolveDir: root,
    sourcefile: 'prom-client-entry.js',
  },
  outfile: `${root}dist/vendor/prom-client/index.js`,
  banner: {
    js: "import { createRequire as vendorRequire } from 'node:module'; const require = vendorRequire(import.meta.url);",
  },
});
// picomatch stays outside: it is imported only when a written path meets a Red Zone path rule.
rmSync(`${root}dist/bundle`, { recursive: true, force: true });
await build({
  ...common,
  entryPoints: { hook: 'src/cli/hook.ts' },
  format: 'cjs',
  // Less to parse on every tool call; names are kept, so a stack trace still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  outExtension: { '.js': '.cjs' },
  external: ['picomatch'],
  outdir: `${root}dist/bundle`,
});
