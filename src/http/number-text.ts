import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';
import { admitted, isJson, type PropertySchema } from './json-types.ts';

const WHOLE = { kind: 'a whole number', pattern: /^-?\d+$/ };
const DECIMAL = { kind: 'a number', pattern: /^-?\d+(\.\d+)?$/ };

/** What a text value must look like, and the words that name it in an error. */
interface NumberText {
  kind: string;
  pattern: RegExp;
}

/** How a text value must look for a property that admits only numbers, or undefined for any other. */
function numberText(schema: PropertySchema | undefined): NumberText | undefined {
  const types = admitted(schema);
  if (!types || types.has('string')) return undefined;
  if ([...types].some((t) => t !== 'integer' && t !== 'number' && t !== 'null')) return undefined;
  return types.has('number') ? DECIMAL : WHOLE;
}

/** The first text value of `values` (a query string or a form, all text) that a numeric property would misread. */
function firstLoose(
  values: unknown,
  schema: { properties?: Record<string, PropertySchema> } | undefined,
): { field: string; value: string; kind: string } | undefined {
  if (typeof values !== 'object' || values === null || !schema?.properties) return undefined;
  for (const [field, value] of Object.entries(values as Record<string, unknown>)) {
    if (!Object.hasOwn(schema.properties, field)) continue;
    const text = numberText(schema.properties[field]);
    if (!text) continue;
    for (const item of [value].flat()) {
      // An empty text is the validator's to judge: null where the schema admits it, else a 400 of its own.
      if (typeof item === 'string' && item !== '' && !text.pattern.test(item))
        return { field, value: item, kind: text.kind };
    }
  }
  return undefined;
}

/**
 * Refuses a number written other than in decimal digits in a query string or a form body (`limit=0x10`,
 * `offset=1e3`, `page= 2`) with 400, before validation. The validator converts text with `Number()`, which reads
 * hexadecimal, binary, exponents and blanks: a client that sent `0x10` meant something, and answering as if it had
 * sent 16 guesses what. JSON bodies carry real numbers (json-types.ts).
 */
export function rejectLooseNumbers(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  const schema = request.routeOptions.schema;
  const loose =
    firstLoose(request.query, schema?.querystring as { properties?: Record<string, PropertySchema> }) ??
    (isJson(request)
      ? undefined
      : firstLoose(request.body, schema?.body as { properties?: Record<string, PropertySchema> }));
  if (!loose) {
    done();
    return;
  }
  const message = `must be ${loose.kind} in decimal digits (${JSON.stringify(loose.value.slice(0, 40))} given)`;
  done(
    new ApiError('invalid_request', `Invalid ${loose.field}: ${message}.`, [{ field: loose.field, message }]),
  );
}
