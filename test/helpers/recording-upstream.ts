import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export interface RecordingUpstream {
  url: URL;
  received: Recorded[];
  close(): Promise<void>;
}

export type UpstreamHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** A plain node:http server on 127.0.0.1:0 that records every request it gets, then runs `handler`. */
export async function startRecordingUpstream(handler: UpstreamHandler): Promise<RecordingUpstream> {
  const received: Recorded[] = [];
  const server = createServer((req, res) => {
    received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}`),
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers JSON with the given status and extra headers. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): UpstreamHandler {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify(body));
  };
}
