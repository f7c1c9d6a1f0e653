#!/usr/bin/env node
/**
 * The `harness` entry. `harness hook` runs on every tool call of an agent, so its start is part of
 * the product: it goes straight to its own small module graph, without commander or any command's
 * imports. Everything else goes through the commander program.
 */

/**
 * A reader that closes the pipe early (`harness explain r | head -3`) has taken what it wanted: the
 * rest of the output is dropped, and the command's own exit code stands instead of a crash on
 * EPIPE. Any other stream error is still thrown.
 */
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

if (process.argv[2] === 'hook') await (await import('./hook.js')).hookMain(process.argv.slice(3));
else await import('./program.js');
