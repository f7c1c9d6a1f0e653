import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout } from 'node:timers/promises';
import type { Test } from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import type { TestBridge } from './bridge.js';

export type Res = { status: number; body: Record<string, any>; headers: Headers | Record<string, unknown> };

type Tap = Test;

/** `p`, or a rejection after `ms`; the timer does not keep the test process alive once `p` settles. */
export const within = <T>(ms: number, p: Promise<T>): Promise<T> =>
  Promise.race([
    p,
    setTimeout(ms, undefined, { ref: false }).then(() =>
      Promise.reject(new Error(`nothing within ${ms} ms`)),
    ),
  ]);

/** The contract failure envelope (CONTRACT 3): exactly ok, error, message (one line), problems. */
export function assertEnvelope(t: Tap, body: Record<string, any>, code?: string): void {
  t.same(Object.keys(body).sort(), ['error', 'message', 'ok', 'problems'], 'failure envelope keys');
  t.equal(body['ok'], false);
  if (code !== undefined) t.equal(body['error'], code, 'error code');
  t.ok(typeof body['message'] === 'string' && !body['message'].includes('\n'), 'one-line message');
  t.ok(
    Array.isArray(body['problems']) && body['problems'].every((p: unknown) => typeof p === 'string'),
    'problems is a list of strings',
  );
}

/** The snapshot and its temporary files: derived, and written lazily, at any time. */
const SNAPSHOT = /^\.?run\.json(\..*\.tmp)?$/;

/**
 * Every file of a run's directory but the snapshot (name -> SHA-256), or null when the run has
 * none: a refusal must leave all of it as it was. The journal alone cannot show a run a refused
 * first event or `POST /runs` left behind (a new run's journal is empty, as a missing one reads),
 * nor a config sealed again.
 */
export async function storedRun(b: TestBridge, runId: string): Promise<Record<string, string> | null> {
  const dir = runPaths(b.t.dataDir, runId).dir;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const files: Record<string, string> = {};
  for (const name of names.filter((n) => !SNAPSHOT.test(n)).sort())
    files[name] = createHash('sha256')
      .update(await readFile(join(dir, name)))
      .digest('hex');
  return files;
}

/**
 * Sends a request that must be refused with `status`/`code`, and proves nothing was stored: the
 * run's journal is byte-for-byte what it was before, and so is every other file of its directory
 * (or it still has none).
 */
export async function expectRejected(
  t: Tap,
  b: TestBridge,
  runId: string,
  send: () => Promise<Res>,
  status: number,
  code: string,
): Promise<Res> {
  const before = await b.journal(runId);
  const stored = await storedRun(b, runId);
  const res = await send();
  t.equal(res.status, status, `status ${status}: ${JSON.stringify(res.body).slice(0, 300)}`);
  assertEnvelope(t, res.body, code);
  const after = await b.journal(runId);
  t.ok(after.equals(before), 'journal bytes unchanged');
  t.same(
    await storedRun(b, runId),
    stored,
    stored === null ? 'no run directory left behind' : 'run files unchanged',
  );
  return res;
}

/** A raw HTTP/1.1 request, for headers fetch will not let a caller set (Host) or raw bodies. */
export function raw(
  url: string,
  opts: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<{ status: number; text: string; body: Record<string, any>; headers: Record<string, unknown> }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method: opts.method ?? 'GET',
        path: opts.path,
        headers: opts.headers ?? {},
        setHost: !Object.keys(opts.headers ?? {}).some((h) => h.toLowerCase() === 'host'),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: Record<string, any>;
          try {
            body = JSON.parse(text);
          } catch {
            body = { raw: text };
          }
          resolve({ status: res.statusCode ?? 0, text, body, headers: res.headers });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

export async function writeArtifact(
  root: string,
  rel: string,
  content: string | Buffer = '{}',
): Promise<string> {
  const path = join(root, rel);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, content);
  return path;
}

/** Every event of a run, paging from the start with eventCursor. */
export async function allEvents(b: TestBridge, runId: string): Promise<Record<string, any>[]> {
  const out: Record<string, any>[] = [];
  let cursor = 0;
  for (;;) {
    const r = await b.req('GET', `/runs/${runId}?eventLimit=200&eventCursor=${cursor}`);
    if (r.status !== 200) throw new Error(`GET /runs/${runId}: ${r.status} ${JSON.stringify(r.body)}`);
    out.push(...r.body['run'].events);
    const next = r.body['run'].eventPage.nextCursor;
    if (next === null) return out;
    cursor = Number(next);
  }
}

/** The records appended to a journal since `before`, once every earlier byte is proven unchanged. */
export function appendedRecords(t: Tap, before: Buffer, after: Buffer): Record<string, any>[] {
  t.ok(after.subarray(0, before.length).equals(before), 'earlier records untouched');
  return records(after.subarray(before.length));
}

/** Journal records as stored (one JSON object per line). */
export function records(journal: Buffer): Record<string, any>[] {
  return journal
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));
}

/**
 * Bytes written to a fresh connection as they are (no HTTP client to tidy them up), and the one
 * answer read until the server closes the connection (it resolves only then): for requests Node's
 * HTTP parser refuses.
 */
export function rawBytes(
  url: string,
  bytes: string | Buffer,
): Promise<{ status: number; head: string; body: Record<string, any> }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const head = split < 0 ? text : text.slice(0, split);
      let body: Record<string, any>;
      try {
        body = JSON.parse(text.slice(split + 4));
      } catch {
        body = { raw: text };
      }
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head, body });
    });
    socket.write(bytes);
  });
}

/** How long `send` takes to answer, in milliseconds, with its answer. */
export async function timed<T>(send: () => Promise<T>): Promise<{ ms: number; res: T }> {
  const start = performance.now();
  const res = await send();
  return { ms: performance.now() - start, res };
}
