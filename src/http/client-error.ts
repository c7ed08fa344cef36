import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errorBody } from './error-handler.ts';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** A request's id: its X-Request-Id when that is 1-64 letters, digits, `.`, `_`, `-`, else a new uuid. */
export function requestIdFor(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** Node's messages for the HTTP-level failures it reports before any route, hook or error handler can run. */
const MESSAGES: Record<string, string> = {
  HPE_HEADER_OVERFLOW:
    'The request line and headers are over the size limit (16 KiB); send a shorter request.',
  ERR_HTTP_REQUEST_TIMEOUT: 'The request did not arrive in time; send it again.',
};
const MALFORMED = 'The request is not well-formed HTTP/1.1.';

/**
 * Fastify's clientErrorHandler: an over-long header block, a request too slow to arrive or bytes that are not HTTP
 * get the error envelope like every other refusal, instead of Fastify's own JSON. They are all `invalid_request`
 * (400): the closed set of codes has no 408 or 431 (docs/decisions.md), and nothing of the request is known yet to
 * echo, so the request id is a fresh one.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer (https://nodejs.org/api/http.html#event-clienterror).
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // A keep-alive connection may be sending an earlier answer still: bytes written now would land inside its body.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const requestId = randomUUID();
    const message = (err.code && MESSAGES[err.code]) ?? MALFORMED;
    const body = JSON.stringify(errorBody('invalid_request', message, requestId));
    socket.write(
      'HTTP/1.1 400 Bad Request\r\n' +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Cache-Control: no-store\r\n' +
        `X-Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy(err);
}

/**
 * The server's `checkExpectation` listener: a request whose Expect header is other than `100-continue` (RFC 9110
 * 10.1.1), which Node answers with a bare 417 outside the envelope before any route runs. It is `invalid_request`
 * (400) in the envelope instead, as the other refusals before routing: the closed set of codes has no 417. The
 * connection is closed: whether the client sends its body after such a header is not known.
 */
export function answerUnmetExpectation(request: IncomingMessage, response: ServerResponse): void {
  const requestId = requestIdFor(request);
  const expect = String(request.headers.expect ?? '');
  const message = 'is not supported: the only expectation this API meets is 100-continue';
  const body = JSON.stringify(
    errorBody(
      'invalid_request',
      `The Expect header ${JSON.stringify(expect.slice(0, 60))} ${message}; send the request without it.`,
      requestId,
      [{ field: 'Expect', message }],
    ),
  );
  response.shouldKeepAlive = false;
  response.writeHead(400, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-request-id': requestId,
    connection: 'close',
  });
  response.end(body);
}
