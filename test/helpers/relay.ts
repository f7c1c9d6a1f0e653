import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestBridge } from './bridge.js';
import { type JsonLinesChild, startJsonLinesChild } from './json-lines-child.js';
import {
  json,
  type RecordingUpstream,
  startRecordingUpstream,
  type UpstreamHandler,
} from './recording-upstream.js';

/** `harness browser-relay` as a child: its printed write URL, records and stderr. */
export interface RelayChild extends JsonLinesChild {
  url: string;
}

/** Starts `harness browser-relay runId --origin ...` and waits for its ready line (`relay`). */
export async function startRelayCli(
  t: { teardown(fn: () => unknown): void },
  env: Record<string, string>,
  runId: string,
  origins: string[],
  extra: string[] = [],
): Promise<RelayChild> {
  const args = ['browser-relay', runId, ...origins.flatMap((o) => ['--origin', o]), ...extra];
  const child = await startJsonLinesChild(t, args, env, (r) => 'relay' in r);
  return { ...child, url: child.records.find((r) => 'relay' in r)!['relay'] as string };
}

export interface PageAnswer {
  status: number;
  body: Record<string, any>;
  headers: Headers;
}

/** A request as a page's fetch sends it: JSON body (a string is sent as is), with `headers`. */
export async function pageRequest(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  method = 'POST',
): Promise<PageAnswer> {
  const res = await fetch(url, {
    method,
    headers,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: Record<string, any>;
  try {
    parsed = text === '' ? {} : JSON.parse(text);
  } catch {
    parsed = { raw: text };
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** A page event as a page of `origin` posts it (no runMode or eventSource: the relay sets them). */
export function postFrom(origin: string, url: string, event: unknown): Promise<PageAnswer> {
  return pageRequest(url, event, { origin, 'content-type': 'application/json' });
}

/** A minimal page event; override fields per test. */
export function pageEv(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'gate.fired',
    actor: 'harness',
    nodeId: 'qa-break-it',
    message: 'e2e: 12 passed',
    status: 'ok',
    ...over,
  };
}

/** A POST with a Host header of our choosing (fetch sets its own): the status and error code. */
export function postWithHost(url: string, host: string, origin: string, event: unknown): Promise<PageAnswer> {
  const body = JSON.stringify(event);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { host, origin, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), headers });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The page origin the relay tests allow. */
export const PAGE = 'http://localhost:5173';

/** Creates run `id` (no mode yet, so the relay takes it). */
export async function newRun(b: TestBridge, id: string): Promise<void> {
  const r = await b.req('POST', '/runs', { id });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
}

/** The run's events as the bridge returns them. */
export async function events(b: TestBridge, id: string): Promise<Record<string, any>[]> {
  return (await b.req('GET', `/runs/${id}?eventLimit=200`)).body['run'].events;
}

/**
 * A relay for PAGE whose bridge is a recording stand-in: it answers the start's run read with a
 * live run, and every POST with `post`. A temporary HOME holds the outbox; all removed in teardown.
 */
export async function startStubbedRelay(
  t: { teardown(fn: () => unknown): void },
  runId: string,
  post: UpstreamHandler,
): Promise<{ upstream: RecordingUpstream; relay: RelayChild; home: string }> {
  const upstream = await startRecordingUpstream((req, res) =>
    req.method === 'GET'
      ? json(200, { ok: true, run: { id: runId, status: 'running', runMode: 'live' } })(req, res)
      : post(req, res),
  );
  t.teardown(() => upstream.close());
  const home = await mkdtemp(join(tmpdir(), 'harness-relay-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const env = {
    PATH: process.env['PATH'] ?? '',
    HOME: home,
    HARNESS_BRIDGE_URL: upstream.url.origin,
    HARNESS_BRIDGE_ACCESS_TOKEN: 'a'.repeat(43),
  };
  return { upstream, relay: await startRelayCli(t, env, runId, [PAGE]), home };
}
