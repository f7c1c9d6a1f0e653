import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { BridgeError, errorBody } from '../contract/index.js';

/** What Node's HTTP parser refused, as the contract's error. */
function parseFailure(code: string | undefined): BridgeError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new BridgeError('request_headers_too_large', "the request's header section is too large");
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new BridgeError('request_timeout', 'the request did not arrive in time');
    default:
      return new BridgeError('malformed_request', 'the request is not well-formed HTTP/1.1');
  }
}

/** Writes one closing answer straight to the socket, with an error envelope as its body. */
export function writeClosingAnswer(
  socket: Socket,
  status: number,
  envelope: object,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (socket.writable) {
    const body = JSON.stringify(envelope);
    const lines = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
      'content-type: application/json; charset=utf-8',
      `content-length: ${Buffer.byteLength(body)}`,
      'connection: close',
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ];
    // Closed once the answer is written, whether or not the client ever ends its side.
    socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`, () => socket.destroy());
  } else {
    socket.destroy();
  }
}

/**
 * A Fastify `clientErrorHandler`. Node refuses some requests in its HTTP parser (a malformed
 * request line or header, a header section past its limit, more body bytes than the
 * Content-Length said, a request that did not arrive in time) before any route or hook sees them,
 * so no `onSend` hook adds a server's usual headers: `headers` are written with the answer
 * instead. Fastify's own answer is not the contract envelope; this one is, echoing nothing of the
 * request, and the connection is closed, as Node does.
 */
export function clientErrorHandlerWith(
  headers: Readonly<Record<string, string>>,
): (err: NodeJS.ErrnoException, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const failure = parseFailure(err.code);
    writeClosingAnswer(socket, failure.status, errorBody(failure), headers);
  };
}

/** The bridge's: docs/api.md asks no headers of its answers beyond the envelope's. */
export const clientErrorHandler = clientErrorHandlerWith({});
