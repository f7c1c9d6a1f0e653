import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

/** Builds the operator web app into dist/ui, which `harness ui` serves as a fixed file table. */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  // The app reads the bridge only through /api/bridge; no env value may be baked into browser code.
  envPrefix: 'HARNESS_UI_PUBLIC_NEVER_',
  plugins: [preact({ devToolsEnabled: false, prefreshEnabled: false })],
  build: {
    outDir: fileURLToPath(new URL('../../../dist/ui', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    modulePreload: { polyfill: false },
  },
  server: { proxy: { '/api/bridge': 'http://127.0.0.1:8788' } },
});
