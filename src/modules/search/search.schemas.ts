import { Type } from 'typebox';
import { pagingQuery } from '../../http/paging.ts';
import { CommentSchema } from '../comment/comment.schemas.ts';
import { MediaSchema } from '../media/media.schemas.ts';
import { MessageSchema } from '../message/message.schemas.ts';
import { NetworkSchema } from '../network/network.schemas.ts';
import { PostSchema } from '../post/post.schemas.ts';
import { TagSchema } from '../tag/tag.schemas.ts';
import { SUPPORTED_LANGUAGES } from '../user/languages.ts';
import { UserSchema } from '../user/user.schemas.ts';

/** Longest query, in characters. */
export const QUERY_MAX = 200;
/** Most items /search/complete returns. */
export const COMPLETE_MAX = 10;

// The user module's schema carries an $id; search embeds a copy without it so the schemas never collide.
const SearchUser = Type.Object({ ...UserSchema.properties }, { additionalProperties: false });

/** Any item of the search index, told apart by `type`. */
export const SearchItemSchema = Type.Union([
  SearchUser,
  NetworkSchema,
  PostSchema,
  CommentSchema,
  MediaSchema,
  MessageSchema,
  TagSchema,
]);

/** Items of /search/complete: users, networks and hashtags. */
export const CompleteItemSchema = Type.Union([SearchUser, NetworkSchema, TagSchema]);

/** data of /search/types: every kind's column (empty arrays included), or only `tag` for a `#` query. */
export const TypedResultSchema = Type.Union([
  Type.Object(
    {
      user: Type.Array(SearchUser),
      network: Type.Array(NetworkSchema),
      post: Type.Array(PostSchema),
      comment: Type.Array(CommentSchema),
      media: Type.Array(MediaSchema),
      messages: Type.Array(MessageSchema),
    },
    { additionalProperties: false },
  ),
  Type.Object({ tag: Type.Array(TagSchema) }, { additionalProperties: false }),
]);

export { NetworkSchema as SearchNetworkSchema, SearchUser as SearchUserSchema, TagSchema as SearchTagSchema };

const Query = Type.String({
  minLength: 1,
  maxLength: QUERY_MAX,
  description:
    'What to search for, 1 to 200 characters; a search by words takes at most 16 (more is a 400). Every word must match, the last one as a prefix; quotes and operators are taken literally.',
});

function orderParam(allowed: readonly string[]) {
  return Type.String({
    maxLength: 40,
    description: `PROPERTY, PROPERTY:asc|desc or "PROPERTY asc|desc"; PROPERTY one of ${allowed.join(', ')}; default relevance:desc.`,
  });
}

const Language = Type.Unsafe<string>({
  type: 'string',
  enum: [...SUPPORTED_LANGUAGES],
  description:
    'ISO 639-1 code: stemming rules, and content (posts, comments, media, messages) in that language only.',
});

/** Orders of the mixed searches. */
export const CONTENT_ORDERS = ['relevance', 'created_at', 'updated_at'] as const;
/** Orders of the user searches. */
export const USER_ORDERS = ['relevance', 'created_at', 'updated_at', 'username', 'karma'] as const;

/** Query string of /search and /search/types. */
export function searchQuery(limitMax: number) {
  return Type.Object(
    {
      query: Query,
      ...pagingQuery(limitMax),
      order: Type.Optional(orderParam(CONTENT_ORDERS)),
      language: Type.Optional(Language),
    },
    { additionalProperties: false },
  );
}

/** Query string of /search/networks and /search/hashtags. */
export const networkSearchQuery = searchQuery;

/** Query string of /search/users and /search/friends. */
export function userSearchQuery(limitMax: number) {
  return Type.Object(
    {
      query: Query,
      exclude_user_uuids: Type.Optional(
        Type.Union(
          [Type.String({ maxLength: 3800 }), Type.Array(Type.String({ maxLength: 3800 }), { maxItems: 100 })],
          {
            description:
              'Users to leave out: exclude_user_uuids[]=UUID (repeatable) or one comma-separated string; at most 100.',
          },
        ),
      ),
      ...pagingQuery(limitMax),
      order: Type.Optional(orderParam(USER_ORDERS)),
      language: Type.Optional(Language),
    },
    { additionalProperties: false },
  );
}

/** Query string of /search/mentions. */
export function mentionSearchQuery(limitMax: number) {
  return Type.Object({ query: Query, ...pagingQuery(limitMax) }, { additionalProperties: false });
}

/** Query string of /search/complete. */
export const CompleteQuery = Type.Object(
  {
    query: Query,
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: COMPLETE_MAX, default: COMPLETE_MAX, description: 'At most 10.' }),
    ),
  },
  { additionalProperties: false },
);
