import { type Static, Type } from 'typebox';
import { UuidSchema, uuidSchema, visibleTextSchema } from '../../http/schemas.ts';
import { BODY_MAX } from '../post/post.schemas.ts';
import { languageSchema } from '../user/languages.ts';

/** A comment as the API returns it; its visibility is its post's. */
export const CommentSchema = Type.Object(
  {
    uuid: UuidSchema,
    type: Type.Literal('comment'),
    post_uuid: UuidSchema,
    user_uuid: uuidSchema('The author.'),
    body: Type.String(),
    language: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

/** Comment as a TypeScript value. */
export type Comment = Static<typeof CommentSchema>;

/** Path parameters of the comment operations (and of the post a comment is added to). */
export const CommentParams = Type.Object(
  { uuid: uuidSchema('uuid of the comment (of the post, when creating)') },
  { additionalProperties: false },
);

const Body = visibleTextSchema(BODY_MAX, `Text, 1 to ${BODY_MAX} characters, not only spaces.`);

/** Body of POST /posts/{uuid}/comments. */
export const CreateCommentBody = Type.Object(
  { body: Body, language: Type.Optional(languageSchema) },
  { additionalProperties: false },
);

/** Input of comment creation. */
export type CreateCommentInput = Static<typeof CreateCommentBody>;

/** Body of POST /comments/{uuid}/update. */
export const UpdateCommentBody = Type.Object({ body: Body }, { additionalProperties: false });

/** Input of comment update. */
export type UpdateCommentInput = Static<typeof UpdateCommentBody>;
