import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

// Query parameters whose values are never logged: a client may put a password, a client secret or a token in the
// URL (refused, but logged all the same when the request is answered).
const SECRET_PARAMETER = /([?&][^=&#]*(?:password|secret|token)[^=&#]*=)[^&#]*/gi;

/** The request as its log line shows it: Fastify's fields, with the values of secret-looking query parameters masked. */
export function requestForLog(req: FastifyRequest) {
  return {
    method: req.method,
    url: req.url.replace(SECRET_PARAMETER, '$1***'),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * One log line per request, written when it is answered, with the request (method, url, host, address), the
 * status and the response time. Fastify's default writes a second line when the request arrives: at `info` that
 * doubled the logging work of every request for one fact the answered line lacks: that a request is still
 * running (what the metrics' latency histogram and the event-loop delay show instead).
 */
export class RequestLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (this.isLogDisabled(request)) return;
    if (error) {
      reply.log.error(
        { req: request, res: reply, err: error, responseTime: reply.elapsedTime },
        'request errored',
      );
    } else {
      reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
    }
  }
}
