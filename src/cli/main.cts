#!/usr/bin/env node
/**
 * The `harness` entry. It is CommonJS, and `harness hook` goes straight to its own bundle
 * (dist/bundle/hook.cjs, built from src/cli/hook.ts by scripts/bundle-vendor.mjs): a hook runs on
 * every tool call of an agent, so its start is part of the product. An ES module entry alone costs
 * almost half a bare Node start in instructions (the ESM loader), before the hook's dozen modules
 * are loaded one by one (docs/performance.md, "Hook"). Every other command goes through the
 * commander program, an ES module. Nothing here touches process.stdout or process.stderr: making
 * those streams costs more than half a bare start, which a hook that prints nothing never pays.
 */

if (process.argv[2] === 'hook') {
  const { hookMain } = require('../../bundle/hook.cjs') as typeof import('./hook.js');
  void hookMain(process.argv.slice(3));
} else {
  void import('./program.js');
}
