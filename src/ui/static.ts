import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface StaticFile {
  body: Buffer;
  type: string;
  immutable: boolean;
}

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
};
const MAX_FILES = 200;
const MAX_TOTAL_BYTES = 16 * 1024 * 1024;

/** dist/ui beside the package root, whether this module runs from src/ (tests) or dist/src/ (built). */
export function defaultWebRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return join(dir, 'dist', 'ui');
}

/**
 * The built web app, read once at startup into an exact-match table. Requests are looked up by
 * literal key, never joined onto a filesystem path, so no URL can reach a file outside the build.
 * Vite names assets by content hash, so those may be cached forever; index.html never is.
 */
export function loadStaticFiles(root: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  if (!existsSync(join(root, 'index.html'))) return files;
  let total = 0;
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      const type = TYPES[extname(entry.name)];
      if (!entry.isFile() || type === undefined) continue;
      total += statSync(full).size;
      if (files.size >= MAX_FILES || total > MAX_TOTAL_BYTES)
        throw new Error(`web build at ${root} is too large`);
      const key = `/${relative(root, full).split(sep).join('/')}`;
      files.set(key, { body: readFileSync(full), type, immutable: key.startsWith('/assets/') });
    }
  };
  walk(root);
  return files;
}
