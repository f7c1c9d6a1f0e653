#!/usr/bin/env node
/**
 * The `harness` entry. It is CommonJS, and `harness hook` goes straight to its own bundle
 * (dist/bundle/hook.cjs, built from src/cli/hook.ts by scripts/bundle-vendor.mjs): a hook runs on
 * every tool call of an agent, so its start is part of the product. An ES module entry alone costs
 * 7% of a bare Node start in instructions (the ESM loader), and loading the hook's dozen modules one
 * by one as much again (docs/performance.md, bench:hook). Every other command goes through the
 * commander program, an ES module. Nothing here touches process.stdout or process.stderr: making
 * those streams is another tenth of a bare start, which a hook that prints nothing never pays.
 */

if (process.argv[2] === 'hook') {
  const { hookMain } = require('../../bundle/hook.cjs') as typeof import('./hook.js');
  void hookMain(process.argv.slice(3));
} else {
  void import('./program.js');
}
