import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';

/** A route's body schema, as far as the body hooks read it. */
interface BodySchema {
  properties?: Record<string, unknown>;
  additionalProperties?: unknown;
}

/** The request's body when it is an object, with its route's body schema when that lists properties. */
export function bodyWithProperties(
  request: FastifyRequest,
):
  | { body: Record<string, unknown>; schema: BodySchema & { properties: Record<string, unknown> } }
  | undefined {
  const body = request.body;
  const schema = request.routeOptions.schema?.body as BodySchema | undefined;
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !schema?.properties)
    return undefined;
  return {
    body: body as Record<string, unknown>,
    schema: schema as BodySchema & { properties: Record<string, unknown> },
  };
}

/** Unknown fields of a body named one by one; a body with more is refused whole, before validation. */
export const UNKNOWN_FIELDS_NAMED = 20;

/**
 * Refuses a body object with more than UNKNOWN_FIELDS_NAMED fields its schema does not accept (400), before the
 * validator sees it. The validator reports every error of a body, and each unknown field is one, then named with
 * the closest accepted field: a 1 MB JSON object of 110,000 fields held the event loop for a second, while a
 * request within the size limit must cost little whatever its shape.
 */
export function rejectUnknownFieldFloods(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  const found = bodyWithProperties(request);
  if (found?.schema.additionalProperties !== false) {
    done();
    return;
  }
  const { body, schema } = found;
  const properties = schema.properties;
  const unknown: string[] = [];
  let count = 0;
  for (const key in body) {
    if (!Object.hasOwn(body, key) || Object.hasOwn(properties, key)) continue;
    count++;
    // Names come from the request: echoed cut short, so 20 names of 50 KB do not make a 1 MB answer.
    if (unknown.length < UNKNOWN_FIELDS_NAMED) unknown.push(key.slice(0, 60));
  }
  if (count <= UNKNOWN_FIELDS_NAMED) {
    done();
    return;
  }
  const message = 'is not an accepted field here';
  done(
    new ApiError(
      'invalid_request',
      `The request body has ${count} fields this operation does not accept (${unknown.slice(0, 3).join(', ')}, ...); send only its documented fields: ${Object.keys(properties).join(', ')}.`,
      unknown.map((field) => ({ field, message })),
    ),
  );
}
