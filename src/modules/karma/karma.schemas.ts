import { Type } from 'typebox';
import { listQuerySchema } from '../../http/list-query.ts';
import { pagingQuery } from '../../http/paging.ts';
import { UuidSchema } from '../../http/schemas.ts';
import { KARMA_WHITELIST } from './karma.service.ts';

const KarmaType = Type.Union([Type.Literal('add'), Type.Literal('subtract')], {
  description: 'add or subtract',
});

/** A karma record as every karma operation returns it. */
export const Karma = Type.Object(
  {
    uuid: Type.String(),
    type: Type.Literal('karma'),
    user_uuid: Type.String({ description: 'The user whose total the record counts in (the owner).' }),
    event: Type.String({ description: 'What earned or cost the points, e.g. commentCreated, postDeleted.' }),
    target_uuid: Type.String({ description: 'uuid of the item the event was about.' }),
    target_type: Type.String({ description: 'Kind of the target item: post, comment, media, ...' }),
    karma_type: KarmaType,
    points: Type.Integer({ minimum: 0, description: 'Points added or subtracted.' }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

/** Path parameters of the single-record operations; any text up to 100 characters (unknown ones are 404). */
export const KarmaParams = Type.Object(
  { karma_uuid: Type.String({ minLength: 1, maxLength: 100, description: 'uuid of the karma record.' }) },
  { additionalProperties: false },
);

/** Body of POST /karma/{karma_uuid}/update: the five fields, all required. */
export const KarmaUpdateBody = Type.Object(
  {
    event: Type.String({
      minLength: 1,
      maxLength: 50,
      description: 'A rule name (postCreated, commentCreated, ...) or a compensation (postDeleted, ...).',
    }),
    target_uuid: UuidSchema,
    target_type: Type.String({
      minLength: 1,
      maxLength: 20,
      description: 'user, network, post, comment, media, messages or connection.',
    }),
    karma_type: KarmaType,
    points: Type.Integer({
      minimum: 0,
      maximum: 1_000_000,
      description: "Points to add or subtract; at most the rule's points for the event.",
    }),
  },
  { additionalProperties: false },
);

/** Query string of GET /karma: paging, sortby, filterby, uuids. */
export function karmaListQuery(limitMax: number) {
  return Type.Object(
    { ...pagingQuery(limitMax), ...listQuerySchema(KARMA_WHITELIST) },
    { additionalProperties: false },
  );
}
