// Builds the operator web app (src/ui/web) into dist/ui with Vite; `npm run build` runs it after tsc.
import { build } from 'vite';

await build({
  configFile: new URL('../src/ui/web/vite.config.ts', import.meta.url).pathname,
  logLevel: 'warn',
});
