import type { FastifyInstance, FastifyRequest } from 'fastify';
import { charsetRefusal, utf8Text } from './body-text.ts';
import { parseNested, refusalOf } from './query-string.ts';

/**
 * Parses `application/x-www-form-urlencoded` bodies with nested keys (as query strings), refusing a charset other
 * than UTF-8 (415), bytes that are not UTF-8 and percent escapes that are malformed or not UTF-8 (400 naming the
 * field): each was read as something else and stored (U+FFFD, or `%E9` kept as three characters).
 */
export function installFormBodyParser(app: FastifyInstance): void {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'buffer' },
    (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      const refused = charsetRefusal(request, 'Form');
      if (refused) {
        done(refused);
        return;
      }
      let parsed: Record<string, unknown>;
      try {
        parsed = parseNested(utf8Text(body as Buffer));
      } catch (err) {
        done(err as Error);
        return;
      }
      const refusal = refusalOf(parsed, 'form body');
      if (refusal === undefined) done(null, parsed);
      else done(refusal);
    },
  );
}
