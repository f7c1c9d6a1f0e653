import { spawn } from 'node:child_process';
import { randomFill } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const fill = promisify(randomFill);
const MiB = 1024 * 1024;

export interface TreeFile {
  path: string;
  size: number;
}

/**
 * The finish-line bench's artifact root: `large` files of 1 MiB and `small` files of 1 to 4 KiB
 * (100 per directory), random bytes, written `parallel` at a time.
 */
export async function writeTree(root: string, large: number, small: number): Promise<TreeFile[]> {
  const files: TreeFile[] = [];
  for (let i = 0; i < large; i++) files.push({ path: `large/f${String(i).padStart(5, '0')}.bin`, size: MiB });
  for (let i = 0; i < small; i++) {
    const dir = `small/d${String(Math.floor(i / 100)).padStart(3, '0')}`;
    files.push({ path: `${dir}/f${String(i).padStart(5, '0')}.bin`, size: 1024 + ((i * 7919) % 3073) });
  }
  await writeFiles(root, files);
  return files;
}

/** Writes each file with fresh random bytes, a few at a time. */
export async function writeFiles(root: string, files: readonly TreeFile[], parallel = 8): Promise<void> {
  const dirs = new Set(files.map((f) => dirname(join(root, f.path))));
  for (const d of dirs) await mkdir(d, { recursive: true });
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const f = files[next++] as TreeFile;
      const bytes = Buffer.allocUnsafe(f.size);
      await fill(bytes);
      await writeFile(join(root, f.path), bytes);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

/** One `xargs openssl dgst -sha256` over a list of paths read from stdin; resolves with its digests. */
function opensslHalf(root: string, paths: readonly string[]): Promise<Map<string, string>> {
  return new Promise((resolve, reject) => {
    const child = spawn('xargs', ['-0', 'openssl', 'dgst', '-sha256'], {
      cwd: root,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => chunks.push(d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`xargs openssl exited with ${code}`));
      const digests = new Map<string, string>();
      for (const line of Buffer.concat(chunks).toString('utf8').split('\n')) {
        const m = /^SHA2?-?256\((.*)\)= ([0-9a-f]{64})$/.exec(line);
        if (m) digests.set(m[1] as string, m[2] as string);
      }
      resolve(digests);
    });
    child.stdin.end(paths.join('\0'));
  });
}

/**
 * The baseline: `openssl dgst -sha256` over the same files in 2 parallel processes, each given
 * every other file (so both halves carry the same mix of large and small files).
 */
export async function opensslBaseline(
  root: string,
  paths: readonly string[],
): Promise<{ ms: number; digests: Map<string, string> }> {
  const halves = [paths.filter((_, i) => i % 2 === 0), paths.filter((_, i) => i % 2 === 1)];
  const t0 = performance.now();
  const maps = await Promise.all(halves.map((h) => opensslHalf(root, h)));
  const ms = performance.now() - t0;
  const digests = new Map([...(maps[0] ?? []), ...(maps[1] ?? [])]);
  if (digests.size !== paths.length)
    throw new Error(`openssl hashed ${digests.size} of ${paths.length} files`);
  return { ms, digests };
}
