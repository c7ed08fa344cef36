import { type TSchema, Type } from 'typebox';

/** Unix time in whole seconds, as every answer carries it. */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** Paging echo of lists and searches. */
export interface Count {
  offset: number;
  limit: number;
  total: number | null;
}

/** Success envelope around one resource. */
export function ok<T>(data: T): { status: 'OK'; data: T; timestamp: number } {
  return { status: 'OK', data, timestamp: nowSeconds() };
}

/** Success envelope around a list or search result. */
export function okList<T>(data: T, count: Count): { status: 'OK'; data: T; count: Count; timestamp: number } {
  return { status: 'OK', data, count, timestamp: nowSeconds() };
}

/** Success envelope of delete-only operations. */
export function okStatus(): { status: 'OK'; timestamp: number } {
  return { status: 'OK', timestamp: nowSeconds() };
}

const Status = Type.Literal('OK');
const Timestamp = Type.Integer({ description: 'Unix time of the response, in seconds' });

/** Schema of the paging echo. */
export const CountSchema = Type.Object(
  {
    offset: Type.Integer({ minimum: 0 }),
    limit: Type.Integer({ minimum: 1 }),
    total: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
  },
  { additionalProperties: false },
);

/** Response schema of an operation returning one resource. */
export function DataEnvelope<T extends TSchema>(data: T) {
  return Type.Object({ status: Status, data, timestamp: Timestamp }, { additionalProperties: false });
}

/** Response schema of a list or search. */
export function ListEnvelope<T extends TSchema>(data: T) {
  return Type.Object(
    { status: Status, data, count: CountSchema, timestamp: Timestamp },
    { additionalProperties: false },
  );
}

/** Response schema of delete-only operations. */
export const StatusEnvelope = Type.Object(
  { status: Status, timestamp: Timestamp },
  { additionalProperties: false },
);

/** Response schema of every error. */
export const ErrorEnvelope = Type.Object(
  {
    status: Type.Literal('ERROR'),
    error: Type.Object(
      {
        code: Type.String(),
        message: Type.String(),
        request_id: Type.Optional(Type.String()),
        details: Type.Optional(
          Type.Array(
            Type.Object({ field: Type.String(), message: Type.String() }, { additionalProperties: false }),
          ),
        ),
      },
      { additionalProperties: false },
    ),
    timestamp: Timestamp,
  },
  { additionalProperties: false, $id: 'ErrorEnvelope' },
);

/** Query-string schema of operations that take no query parameters. */
export const NoQuery = Type.Object({}, { additionalProperties: false });

/** Body schema of operations that take no body properties (a bare POST is an empty body). */
export const NoBody = Type.Object({}, { additionalProperties: false, description: 'No properties.' });
