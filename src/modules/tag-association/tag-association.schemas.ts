import { Type } from 'typebox';
import { listQuerySchema, type Whitelist } from '../../http/list-query.ts';
import { pagingQuery } from '../../http/paging.ts';
import { UuidSchema } from '../../http/schemas.ts';
import { EMOTIONS } from '../tag/normalize.ts';
import { languageSchema } from '../user/languages.ts';
import { ASSOCIATION_TARGET_TYPES } from './tag-association.service.ts';

const Time = Type.String({ description: 'ISO 8601 UTC time.' });
const TargetType = Type.Union(
  ASSOCIATION_TARGET_TYPES.map((t) => Type.Literal(t)),
  { description: `Kind of the target: ${ASSOCIATION_TARGET_TYPES.join(', ')}.` },
);

/** A tag association as the API returns it. */
export const TagAssociationSchema = Type.Object(
  {
    uuid: UuidSchema,
    type: Type.Literal('tag_association'),
    tag_uuid: UuidSchema,
    user_uuid: Type.String({
      description: 'The user who made the association (the author for extracted tags).',
    }),
    target_uuid: UuidSchema,
    target_type: Type.String({ description: 'Kind of the target, e.g. post or comment.' }),
    created_at: Time,
    updated_at: Time,
  },
  { additionalProperties: false },
);

/** Path of the operations on one association. */
export const AssociationParams = Type.Object(
  { tag_association_uuid: UuidSchema },
  { additionalProperties: false },
);

/** Query of GET /tag-associations. */
export function associationListQuery(limitMax: number, whitelist: Whitelist) {
  return Type.Object(
    {
      ...pagingQuery(limitMax),
      ...listQuerySchema(whitelist),
      language: Type.Optional(languageSchema),
    },
    { additionalProperties: false },
  );
}

/** Body of POST /tag-association. */
export const CreateAssociationBody = Type.Object(
  { tag_uuid: UuidSchema, target_uuid: UuidSchema, target_type: TargetType },
  { additionalProperties: false },
);

const UpdateFields = {
  tag_uuid: Type.Optional(UuidSchema),
  target_uuid: Type.Optional(UuidSchema),
  target_type: Type.Optional(TargetType),
};

/** Body of PATCH /tag-associations/{uuid}: any of the three fields. */
export const UpdateAssociationBody = Type.Object(UpdateFields, { additionalProperties: false });

/** Body of POST /tag-associations/{uuid}: `_method` (or the X-HTTP-Method-Override header) picks delete or update. */
export const WriteAssociationBody = Type.Object(
  {
    _method: Type.Optional(
      Type.String({ maxLength: 10, description: 'delete or update (or send X-HTTP-Method-Override).' }),
    ),
    ...UpdateFields,
  },
  { additionalProperties: false },
);

const Emotion = Type.Union(
  EMOTIONS.map((e) => Type.Literal(e)),
  { description: `One of the configured emotions: ${EMOTIONS.join(', ')}.` },
);

/** Body of POST /posts/{uuid}/emotions and /comments/{uuid}/emotions. */
export const ReactBody = Type.Object({ name: Emotion }, { additionalProperties: false });

/** Path of a content item's emotions. */
export const ContentParams = Type.Object({ uuid: UuidSchema }, { additionalProperties: false });

/** Path of one reaction to take back. */
export const ReactionParams = Type.Object(
  { uuid: UuidSchema, name: Emotion },
  { additionalProperties: false },
);
