import { type Static, Type } from 'typebox';
import { ClearValue, nameTextSchema, UuidSchema, uuidSchema } from '../../http/schemas.ts';

/** Largest payment_id: the largest integer both engines and JSON carry exactly (2^53 - 1). */
export const MAX_PAYMENT_ID = Number.MAX_SAFE_INTEGER;

/** A network as the API returns it. */
export const NetworkSchema = Type.Object(
  {
    uuid: UuidSchema,
    type: Type.Literal('network'),
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    payment_id: Type.Union([Type.Integer(), Type.Null()]),
    user_uuid: uuidSchema('The creator, who owns the network.'),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

/** Network as a TypeScript value. */
export type Network = Static<typeof NetworkSchema>;

/** Path parameters of the network operations. */
export const NetworkParams = Type.Object(
  { uuid: uuidSchema('uuid of the network') },
  { additionalProperties: false },
);

const Name = nameTextSchema(
  100,
  'Name, 1 to 100 characters, not only spaces; no control characters, direction overrides or zero-width spaces.',
);
const Description = Type.String({ maxLength: 2000, description: 'Description, up to 2000 characters.' });

/** Body of POST /networks. */
export const CreateNetworkBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    payment_id: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_PAYMENT_ID,
        description: 'Payment reference, a whole number.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Input of network creation. */
export type CreateNetworkInput = Static<typeof CreateNetworkBody>;

/** Body of POST /networks/{uuid}/update: at least one field. */
export const UpdateNetworkBody = Type.Object(
  { name: Type.Optional(Name), description: Type.Optional(Type.Union([ClearValue, Description])) },
  { additionalProperties: false, minProperties: 1 },
);

/** Input of network update. */
export type UpdateNetworkInput = Static<typeof UpdateNetworkBody>;
