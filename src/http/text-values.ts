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

/**
 * The first value of `values` (a query string or a form, all text) that its property would misread: a list where
 * the schema takes one value (`limit[]=5`, `limit[0]=5`, `limit=1&limit=2`: the validator takes a list of one as its
 * element), or a number not in decimal digits. Undefined when there is none.
 */
function firstLoose(
  values: unknown,
  schema: { properties?: Record<string, PropertySchema> } | undefined,
): { field: string; message: string } | undefined {
  if (typeof values !== 'object' || values === null || !schema?.properties) return undefined;
  for (const [field, value] of Object.entries(values as Record<string, unknown>)) {
    if (!Object.hasOwn(schema.properties, field)) continue;
    const property = schema.properties[field];
    if (Array.isArray(value) && admitted(property)?.has('array') === false) {
      return {
        field,
        message: 'takes one value: it was given twice, or as a list (drop the repeated parameter or the [])',
      };
    }
    const text = numberText(property);
    if (!text) continue;
    for (const item of [value].flat()) {
      // An empty text is the validator's to judge: null where the schema admits it, else a 400 of its own.
      if (typeof item === 'string' && item !== '' && !text.pattern.test(item)) {
        return {
          field,
          message: `must be ${text.kind} in decimal digits (${JSON.stringify(item.slice(0, 40))} given)`,
        };
      }
    }
  }
  return undefined;
}

/**
 * Refuses, with 400 before validation, a value of a query string or a form body that the validator would misread:
 * a number written other than in decimal digits (`limit=0x10`, `offset=1e3`, `page= 2`; it converts text with
 * `Number()`, which reads hexadecimal, binary, exponents and blanks), or a list where one value is taken
 * (`limit[]=5`; it takes a list of one as its element). A client that sent either meant something, and answering as
 * if it had sent the plain value guesses what. JSON bodies carry real numbers and lists (json-types.ts).
 */
export function rejectLooseTextValues(
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
  const { field, message } = loose;
  done(new ApiError('invalid_request', `Invalid ${field}: ${message}.`, [{ field, message }]));
}
