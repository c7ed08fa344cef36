import type { FastifyInstance, FastifyRequest } from 'fastify';
import { charsetRefusal, utf8Text } from './body-text.ts';
import { NoBody } from './envelope.ts';
import { ApiError } from './errors.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/**
 * The first name given twice in one object of a JSON text, at any depth, or undefined. `text` must be valid JSON
 * (it has been parsed already): only strings, brackets and commas are looked at. Names compare decoded, so `"a"` and
 * `"\u0061"` are the same name.
 */
export function firstDuplicateKey(text: string): string | undefined {
  // Per open object its names (undefined until it has one: most objects are small, many empty); null for an array.
  const open: (Set<string> | undefined | null)[] = [];
  let atName = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i + 1;
      let escaped = false;
      // Bounded by the text's end, though parsed JSON always closes its strings.
      while (end < text.length && text.charCodeAt(end) !== QUOTE) {
        if (text.charCodeAt(end) === BACKSLASH) {
          escaped = true;
          end++;
        }
        end++;
      }
      if (end >= text.length) return undefined;
      const depth = open.length - 1;
      if (atName && depth >= 0 && open[depth] !== null) {
        const name = escaped ? (JSON.parse(text.slice(i, end + 1)) as string) : text.slice(i + 1, end);
        const names = open[depth] ?? new Set<string>();
        if (names.has(name)) return name;
        names.add(name);
        open[depth] = names;
        atName = false;
      }
      i = end;
    } else if (c === OPEN_OBJECT) {
      open.push(undefined);
      atName = true;
    } else if (c === OPEN_ARRAY) {
      open.push(null);
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop();
    } else if (c === COMMA) {
      atName = open.length > 0 && open[open.length - 1] !== null;
    }
  }
  return undefined;
}

/**
 * Replaces the JSON body parser by Fastify's own (prototype and constructor poisoning refused), after refusing a
 * charset other than UTF-8 (415) and bytes that are not UTF-8 (400), and followed by a check that no object names a
 * field twice: `JSON.parse` keeps the last value, where a query string or a form with a parameter given twice is
 * refused, and a proxy or filter in front that reads the first value would see another request than the one served
 * (docs/http.md). An empty body is no body on an operation that takes none (NoBody), as a bare POST is.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer' },
    (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      const refused = charsetRefusal(request, 'JSON');
      if (refused) {
        done(refused);
        return;
      }
      // A client that labels an empty body as JSON sends nothing, which an operation without body fields accepts:
      // OpenAPI documents its body as optional, and the validator would otherwise see an unreadable body.
      if (body.length === 0 && request.routeOptions.schema?.body === NoBody) {
        done(null, undefined);
        return;
      }
      let text: string;
      try {
        text = utf8Text(body as Buffer);
      } catch (err) {
        done(err as Error);
        return;
      }
      parse(request, text, (err: Error | null, parsed?: unknown) => {
        if (err) {
          done(err);
          return;
        }
        const name = typeof parsed === 'object' && parsed !== null ? firstDuplicateKey(text) : undefined;
        if (name === undefined) {
          done(null, parsed);
          return;
        }
        const field = name.slice(0, 60);
        const message = 'is given twice';
        done(
          new ApiError(
            'invalid_request',
            `The JSON body names the field ${JSON.stringify(field)} twice in one object; send each field once.`,
            [{ field, message }],
          ),
        );
      });
    },
  );
}
