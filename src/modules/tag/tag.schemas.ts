import { Type } from 'typebox';
import { listQuerySchema, type Whitelist } from '../../http/list-query.ts';
import { pagingQuery } from '../../http/paging.ts';
import { UuidSchema } from '../../http/schemas.ts';
import { EMOTIONS, TAG_TYPES } from './normalize.ts';

const Time = Type.String({ description: 'ISO 8601 UTC time.' });

/** The kinds of tag. */
export const TagTypeSchema = Type.Union(
  TAG_TYPES.map((t) => Type.Literal(t)),
  { description: `One of ${TAG_TYPES.join(', ')}.` },
);

/** A tag as the API returns it. */
export const TagSchema = Type.Object(
  {
    uuid: UuidSchema,
    type: Type.Literal('tag'),
    name: Type.String({ description: 'The first spelling seen, without # or @.' }),
    tag_type: TagTypeSchema,
    associations: Type.Array(UuidSchema, { description: 'uuids of the newest associations, at most 100.' }),
    associations_count: Type.Integer({ minimum: 0, description: 'How many associations the tag has.' }),
    created_at: Time,
    updated_at: Time,
  },
  { additionalProperties: false },
);

/** A trending hashtag: the tag plus its use in the window. */
export const TrendingTagSchema = Type.Object(
  {
    ...TagSchema.properties,
    users: Type.Integer({ minimum: 0, description: 'Distinct users who used it in the window.' }),
    uses: Type.Integer({ minimum: 0, description: 'Uses in the window.' }),
    hours: Type.Array(
      Type.Object(
        {
          hour: Type.String({ description: 'Start of the UTC hour.' }),
          uses: Type.Integer({ minimum: 0 }),
        },
        { additionalProperties: false },
      ),
      { description: 'Uses per clock hour of the window, oldest first.' },
    ),
  },
  { additionalProperties: false },
);

/** Path of GET and PUT on one tag. */
export const TagUuidParams = Type.Object({ tag_uuid: UuidSchema }, { additionalProperties: false });
/** Path of POST /tags/{uuid}/delete. */
export const UuidParams = Type.Object({ uuid: UuidSchema }, { additionalProperties: false });

/** Query of GET /tags. */
export function tagListQuery(limitMax: number, whitelist: Whitelist) {
  return Type.Object(
    { ...pagingQuery(limitMax), ...listQuerySchema(whitelist) },
    { additionalProperties: false },
  );
}

/** Query of GET /tags/trending. */
export const TrendingQuery = Type.Object(
  {
    window: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 168, default: 24, description: 'Window in hours, 1 to 168.' }),
    ),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'How many hashtags, 1 to 50.' }),
    ),
  },
  { additionalProperties: false },
);

/** Body of POST /tags/create and PUT /tags/{tag_uuid}/update. */
export const TagBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      // A bound on what is read, not the rule: the service counts 1 to 100 characters after NFC, and a name typed
      // in decomposed form (macOS) takes up to four code points a letter before it.
      maxLength: 401,
      description: `1 to 100 letters, digits or _ (a leading # or @ is dropped); emotions: ${EMOTIONS.join(', ')}.`,
    }),
    tag_type: TagTypeSchema,
  },
  { additionalProperties: false },
);
