import { type Static, Type } from 'typebox';
import { ClearValue, nameTextSchema, uuidSchema } from '../../http/schemas.ts';
import { languageSchema } from './languages.ts';

const UserUuid = uuidSchema('UUID of the user');
const Time = Type.String({ format: 'date-time', description: 'ISO 8601 UTC time' });

/** Limits of the user fields, shared by the schemas and the docs. */
export const USER_LIMITS = {
  usernameMin: 3,
  usernameMax: 30,
  emailMax: 254,
  passwordMin: 8,
  passwordMax: 256,
  displayNameMax: 100,
  bioMax: 1000,
} as const;

/** A user as anyone may see it: never the email, role or password hash. */
export const UserSchema = Type.Object(
  {
    uuid: UserUuid,
    type: Type.Literal('user'),
    network_uuid: Type.Union([Type.String(), Type.Null()], { description: 'The network the user joined' }),
    username: Type.String(),
    display_name: Type.Union([Type.String(), Type.Null()]),
    bio: Type.Union([Type.String(), Type.Null()]),
    language: Type.String({ description: 'ISO 639-1 language code' }),
    karma: Type.Integer({ description: 'Sum of the user’s karma records' }),
    created_at: Time,
    updated_at: Time,
  },
  { additionalProperties: false, $id: 'User' },
);

/** The caller's own user: the public fields plus email and role. */
export const MeSchema = Type.Object(
  {
    ...UserSchema.properties,
    email: Type.String(),
    role: Type.Union([Type.Literal('user'), Type.Literal('admin')]),
  },
  { additionalProperties: false, $id: 'Me' },
);

const Username = Type.String({
  minLength: USER_LIMITS.usernameMin,
  maxLength: USER_LIMITS.usernameMax,
  pattern: '^[A-Za-z0-9_]+$',
  description: '3 to 30 letters (A-Z, a-z), digits or _; unique ignoring case',
});
const Email = Type.String({
  format: 'email',
  maxLength: USER_LIMITS.emailMax,
  description: 'Unique ignoring case; never shown to other users',
});
const Password = Type.String({
  minLength: USER_LIMITS.passwordMin,
  maxLength: USER_LIMITS.passwordMax,
  description: '8 to 256 characters, used in full (never truncated)',
});
const DisplayName = nameTextSchema(
  USER_LIMITS.displayNameMax,
  'Name shown instead of the username: 1 to 100 characters, at least one of them visible; no control characters, direction overrides or zero-width spaces',
);
const Bio = Type.String({ maxLength: USER_LIMITS.bioMax });

/** Body of POST /users. */
export const RegisterBody = Type.Object(
  {
    username: Username,
    email: Email,
    password: Password,
    display_name: Type.Optional(DisplayName),
    bio: Type.Optional(Bio),
    language: Type.Optional(languageSchema),
  },
  { additionalProperties: false },
);

/**
 * Body of POST /users/{uuid}/update: any of the fields; JSON null clears display_name or bio, and "" is judged as
 * the text it is (a 400 for display_name, an empty bio), as at registration.
 */
export const UpdateBody = Type.Object(
  {
    display_name: Type.Optional(Type.Union([ClearValue, DisplayName])),
    bio: Type.Optional(Type.Union([ClearValue, Bio])),
    language: Type.Optional(languageSchema),
    password: Type.Optional(Password),
  },
  { additionalProperties: false },
);

/** Path parameters of /users/{uuid}/... */
export const UserParams = Type.Object({ uuid: UserUuid }, { additionalProperties: false });

/** Types of the bodies as the service sees them. */
export type RegisterInput = Static<typeof RegisterBody>;
/** Fields of an update. */
export type UpdateInput = Static<typeof UpdateBody>;
