import { createServer, type Server, type Socket } from 'node:net';
import type { Test } from 'tap';

/**
 * A stand-in for a stopped or wedged bridge: it accepts connections and never answers, or (with
 * `headersFirst`) sends the headers of an answer and stalls its body. `received` is every byte sent
 * to it.
 */
export async function silentBridge(
  t: Test,
  headersFirst: boolean,
): Promise<{ origin: string; received: () => string }> {
  const sockets = new Set<Socket>();
  let received = '';
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (chunk) => {
      received += chunk.toString();
      if (headersFirst && received.includes('\r\n\r\n'))
        socket.write(
          'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"ok":',
        );
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((done) => server.close(done));
  });
  const { port } = server.address() as { port: number };
  return { origin: `http://127.0.0.1:${port}`, received: () => received };
}
