import * as crypto from 'node:crypto';
import { type FSWatcher, renameSync, watch } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { mkdir, mkdtemp, readdir, realpath, rename, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { McpSession } from '../src/mcp/context.js';
import { confirmedRoot } from '../src/mcp/run-root.js';
import { WriteRefused, writeArtifactFile } from '../src/mcp/write-file.js';

/**
 * harness.write_artifact against an agent that swaps directories under the artifact root while
 * the write runs: the walk, the temp file and the rename all go through the directory descriptors
 * held from the walk, so a directory swapped for a link to outside the root never receives a byte,
 * and a held directory moved out of the root is refused with nothing of the write left in it.
 */
const base = await realpath(await mkdtemp(join(tmpdir(), 'harness-write-race-')));
t.teardown(() => rm(base, { recursive: true, force: true }));
const FIXED = Buffer.alloc(12, 0xcd);
const tempName = `.harness-write-${FIXED.toString('hex')}.tmp`;

/** `<name>/root/a` (the directory written into) and `<name>/outside`, beside the root. */
async function rootAndOutside(name: string): Promise<{ root: string; outside: string }> {
  const root = join(base, name, 'root');
  const outside = join(base, name, 'outside');
  await mkdir(join(root, 'a'), { recursive: true });
  await mkdir(outside);
  return { root, outside };
}

/** Records every name that ever appears in `dir`, however briefly (inotify). */
function watchCreations(dir: string): { seen: Set<string>; watcher: FSWatcher } {
  const seen = new Set<string>();
  const watcher = watch(dir, (_event, name) => {
    if (name !== null) seen.add(String(name));
  });
  return { seen, watcher };
}

t.test('a directory swapped for a link to outside the root never receives the file', async (t) => {
  const { root, outside } = await rootAndOutside('race');
  const { seen, watcher } = watchCreations(outside);
  t.teardown(() => watcher.close());
  let stop = false;
  let cycle = 0;
  const swapper = (async () => {
    while (!stop) {
      // Now and then the directory stays put long enough for a write to complete: briefly every
      // 8th cycle, and every 64th long enough for one on a loaded machine (a run where every
      // write was refused would not have shown the race both ways).
      const pause = cycle % 64 === 0 ? 50 : cycle % 8 === 0 ? 3 : 0;
      cycle++;
      if (pause > 0) await new Promise((r) => setTimeout(r, pause));
      await rename(join(root, 'a'), join(root, 'a.real')).catch(() => {});
      await symlink(outside, join(root, 'a')).catch(() => {});
      await new Promise((r) => setImmediate(r));
      await rm(join(root, 'a'), { force: true }).catch(() => {});
      await rename(join(root, 'a.real'), join(root, 'a')).catch(() => {});
      await new Promise((r) => setImmediate(r));
    }
  })();
  let ok = 0;
  let refused = 0;
  const deadline = Date.now() + 4000;
  const failed: string[] = [];
  while (Date.now() < deadline) {
    try {
      await writeArtifactFile(root, 'a/x.json', Buffer.from('{"escaped":true}'));
      ok++;
    } catch (err) {
      if (err instanceof WriteRefused) refused++;
      else failed.push((err as Error).message);
    }
  }
  stop = true;
  await swapper;
  await new Promise((r) => setTimeout(r, 50));
  t.comment(`written ${ok}, refused ${refused}`);
  t.ok(ok > 0 && refused > 0, 'the race ran both ways');
  t.same(failed.slice(0, 3), [], 'every failure is a refusal');
  t.same(await readdir(outside), [], 'nothing outside the root');
  t.same([...seen], [], 'nothing was ever created outside the root');
  for (const dir of ['a', 'a.real']) {
    const names = await readdir(join(root, dir)).catch(() => []);
    t.notOk(
      names.some((n) => n.endsWith('.tmp')),
      `no temp file left in ${dir}`,
    );
  }
});

// Resolved from this file's own URL: tap resolves a relative specifier from the source-mapped caller
// (test/*.ts), while the module to load is the compiled one beside the compiled test.
async function writerWith(mocks: Record<string, unknown>) {
  return t.mockImport<typeof import('../src/mcp/write-file.js')>(
    new URL('../src/mcp/write-file.js', import.meta.url).href,
    mocks,
  );
}

t.test('a held directory moved out of the root before the temp file is refused', async (t) => {
  const { root, outside } = await rootAndOutside('before');
  const { writeArtifactFile, WriteRefused } = await writerWith({
    'node:crypto': {
      ...crypto,
      randomBytes: () => {
        renameSync(join(root, 'a'), join(outside, 'a'));
        return FIXED;
      },
    },
  });
  const err = await writeArtifactFile(root, 'a/x.json', Buffer.from('payload')).catch((e: Error) => e);
  t.type(err, WriteRefused);
  t.same(await readdir(join(outside, 'a')), [], 'nothing written in the moved directory');
  t.same(await readdir(root), [], 'nor under the root');
});

t.test('a held directory moved out of the root during the rename loses the file', async (t) => {
  const { root, outside } = await rootAndOutside('during');
  const { writeArtifactFile, WriteRefused } = await writerWith({
    'node:crypto': { ...crypto, randomBytes: () => FIXED },
    'node:fs/promises': {
      ...fsp,
      rename: async (from: string, to: string) => {
        await fsp.rename(from, to);
        renameSync(join(root, 'a'), join(outside, 'a'));
      },
    },
  });
  const err = await writeArtifactFile(root, 'a/x.json', Buffer.from('payload')).catch((e: Error) => e);
  t.type(err, WriteRefused);
  t.same(await readdir(join(outside, 'a')), [], 'the written file and its temp are gone');
  t.notOk((await readdir(root)).includes(tempName));
});

t.test('the root the bridge confirmed is the root written under', async (t) => {
  const sealed = join(base, 'confirm', 'sealed');
  const elsewhere = join(base, 'confirm', 'elsewhere');
  const link = join(base, 'confirm', 'link');
  await mkdir(sealed, { recursive: true });
  await mkdir(elsewhere);
  await symlink(sealed, link);
  const asked: unknown[] = [];
  // The bridge confirms the root; while it answers, the agent re-points the link it named.
  const session = {
    roots: new Map<string, string>(),
    request: async (_method: string, _path: string, body?: unknown) => {
      asked.push((body as { artifactRoot?: unknown }).artifactRoot);
      await rm(link);
      await symlink(elsewhere, link);
      return { status: 200, body: { ok: true }, headers: new Headers() };
    },
  } as unknown as McpSession;
  const root = await confirmedRoot(session, 'run-1', link);
  t.same(root, { ok: true, value: sealed }, 'the write goes under the confirmed root');
  t.same(asked, [sealed], 'the bridge was asked about that same resolved path');
});
