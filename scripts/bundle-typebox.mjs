// Bundles the `typebox` package into dist/vendor/typebox (one ESM file per entry the code imports,
// sharing one chunk, so there is one copy of TypeBox's registries). The package ships as about 700
// separate modules, and loading them was most of the start-up of every CLI command, validator
// child and bridge. The code imports it as `#typebox` (package.json "imports"): types from the
// package's own declarations, code from this bundle. `npm run build` runs this after tsc.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = `${root}dist/vendor/typebox`;
rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: {
    index: 'typebox',
    compile: 'typebox/compile',
    value: 'typebox/value',
  },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outdir,
  logLevel: 'warning',
});
