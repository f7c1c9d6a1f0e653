// Bundles the two dependencies that ship as many small ES modules into dist/vendor: `typebox`
// (about 700 modules) and `execa` (about 100). Loading them module by module was most of the
// start-up of every CLI command, validator child and bridge. The code imports them as `#typebox`,
// `#typebox/compile`, `#typebox/value` and `#execa` (package.json "imports"): types from the
// packages' own declarations (src/vendor), code from these bundles. `npm run build` runs this
// after tsc.
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
