import { type Static, Type } from 'typebox';
import { UuidSchema, uuidSchema, visibleTextSchema } from '../../http/schemas.ts';
import { languageSchema } from '../user/languages.ts';

/** Who may see an item: everyone, the owner's confirmed friends (and the owner), or the owner alone. */
export const VISIBILITIES = ['public', 'friends', 'private'] as const;

/** Schema of a visibility value. */
export const visibilitySchema = Type.Enum([...VISIBILITIES], {
  type: 'string',
  description: 'public (everyone), friends (the owner and confirmed friends) or private (the owner).',
});

/** Largest body of a post, comment or message, in characters. */
export const BODY_MAX = 5000;

/** A post as the API returns it. */
export const PostSchema = Type.Object(
  {
    uuid: UuidSchema,
    type: Type.Literal('post'),
    user_uuid: uuidSchema('The author.'),
    body: Type.String(),
    visibility: visibilitySchema,
    language: Type.String(),
    network_uuid: Type.Union([UuidSchema, Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

/** Post as a TypeScript value. */
export type Post = Static<typeof PostSchema>;

/** Path parameters of the post operations. */
export const PostParams = Type.Object(
  { uuid: uuidSchema('uuid of the post') },
  { additionalProperties: false },
);

const Body = visibleTextSchema(BODY_MAX, `Text, 1 to ${BODY_MAX} characters, not only spaces.`);

/** Body of POST /posts. */
export const CreatePostBody = Type.Object(
  {
    body: Body,
    visibility: Type.Optional(visibilitySchema),
    language: Type.Optional(languageSchema),
    network_uuid: Type.Optional(uuidSchema('A network to post in.')),
  },
  { additionalProperties: false },
);

/** Input of post creation. */
export type CreatePostInput = Static<typeof CreatePostBody>;

/** Body of POST /posts/{uuid}/update: at least one field. */
export const UpdatePostBody = Type.Object(
  {
    body: Type.Optional(Body),
    visibility: Type.Optional(visibilitySchema),
    language: Type.Optional(languageSchema),
  },
  { additionalProperties: false, minProperties: 1 },
);

/** Input of post update. */
export type UpdatePostInput = Static<typeof UpdatePostBody>;
