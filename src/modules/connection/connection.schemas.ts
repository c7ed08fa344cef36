import { Type } from 'typebox';
import { listQuerySchema, type Whitelist } from '../../http/list-query.ts';
import { pagingQuery } from '../../http/paging.ts';
import { UuidSchema, uuidSchema } from '../../http/schemas.ts';

/** States of a connection. */
export const CONNECTION_STATUSES = ['pending', 'confirmed'] as const;

/** A connection between two users, as the API returns it. */
export const ConnectionSchema = Type.Object(
  {
    uuid: UuidSchema,
    type: Type.Literal('connection'),
    user_uuid: uuidSchema('The requester.'),
    target_user_uuid: uuidSchema('The addressee, who may confirm.'),
    status: Type.Enum([...CONNECTION_STATUSES], { type: 'string' }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

/** Connection as a TypeScript value. */
export interface Connection {
  uuid: string;
  type: 'connection';
  user_uuid: string;
  target_user_uuid: string;
  status: (typeof CONNECTION_STATUSES)[number];
  created_at: string;
  updated_at: string;
}

/** Path parameters of the connection operations. */
export const ConnectionParams = Type.Object(
  { uuid: uuidSchema('uuid of the connection') },
  { additionalProperties: false },
);

/** Body of POST /connections. */
export const CreateConnectionBody = Type.Object(
  { user_uuid: uuidSchema('The user to send a friend request to.') },
  { additionalProperties: false },
);

/** Properties of GET /connections that sortby and filterby accept. */
export const CONNECTION_WHITELIST: Whitelist = {
  status: { column: 'connections.status', type: 'enum', values: CONNECTION_STATUSES },
  user_uuid: { column: 'connections.user_uuid', type: 'uuid' },
  target_user_uuid: { column: 'connections.target_user_uuid', type: 'uuid' },
  created_at: { column: 'connections.created_at', type: 'datetime' },
  updated_at: { column: 'connections.updated_at', type: 'datetime' },
};

/** Query string of GET /connections. */
export function connectionListQuery(limitMax: number) {
  return Type.Object(
    { ...pagingQuery(limitMax), ...listQuerySchema(CONNECTION_WHITELIST) },
    { additionalProperties: false },
  );
}
