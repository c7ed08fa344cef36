import type { FastifyRequest, preParsingHookHandler } from 'fastify';
import { ApiError } from './errors.ts';

/** Whether a request carries a body: a length other than 0, or a chunked one. */
function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * preParsing hook: a body with a Content-Encoding other than `identity` (gzip, br, deflate, ...) is a 415. Bodies
 * are read as sent: a compressed one failed as unreadable JSON (400), and a plain one labelled `gzip` was read as
 * plain, where a proxy or filter in front that decodes it would see another body than the one served.
 */
export const rejectContentEncoding: preParsingHookHandler = (request, _reply, payload, done) => {
  const encoding = request.headers['content-encoding'];
  if (encoding === undefined || !hasBody(request)) {
    done(null, payload);
    return;
  }
  const codings = encoding
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '');
  if (codings.every((coding) => coding === 'identity')) {
    done(null, payload);
    return;
  }
  done(
    new ApiError(
      'unsupported_media_type',
      `The request body is sent with Content-Encoding ${JSON.stringify(encoding.slice(0, 40))}, which is not accepted: send it uncompressed, without Content-Encoding (or with identity).`,
    ),
  );
};
