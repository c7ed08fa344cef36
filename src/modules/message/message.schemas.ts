import { type Static, Type } from 'typebox';
import { listQuerySchema, type Whitelist } from '../../http/list-query.ts';
import { pagingQuery } from '../../http/paging.ts';
import { UuidSchema, uuidSchema, visibleTextSchema } from '../../http/schemas.ts';
import { BODY_MAX } from '../post/post.schemas.ts';
import { languageSchema } from '../user/languages.ts';

/** A private message as the API returns it (type `messages`, the spec's name in search results). */
export const MessageSchema = Type.Object(
  {
    uuid: UuidSchema,
    type: Type.Literal('messages'),
    user_uuid: uuidSchema('The sender.'),
    recipient_uuid: UuidSchema,
    body: Type.String(),
    language: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

/** Message as a TypeScript value. */
export type Message = Static<typeof MessageSchema>;

/** Path parameters of the message operations. */
export const MessageParams = Type.Object(
  { uuid: uuidSchema('uuid of the message') },
  { additionalProperties: false },
);

/** Body of POST /messages. */
export const CreateMessageBody = Type.Object(
  {
    recipient_uuid: uuidSchema('The user to send the message to.'),
    body: visibleTextSchema(BODY_MAX, `Text, 1 to ${BODY_MAX} characters, not only spaces.`),
    language: Type.Optional(languageSchema),
  },
  { additionalProperties: false },
);

/** Input of message creation. */
export type CreateMessageInput = Static<typeof CreateMessageBody>;

/** Properties of GET /messages that sortby and filterby accept (a page deeper than the offset cap needs them). */
export const MESSAGE_WHITELIST: Whitelist = {
  user_uuid: { column: 'messages.user_uuid', type: 'uuid' },
  recipient_uuid: { column: 'messages.recipient_uuid', type: 'uuid' },
  created_at: { column: 'messages.created_at', type: 'datetime' },
};

/** Query string of GET /messages. */
export function messageListQuery(limitMax: number) {
  return Type.Object(
    { ...pagingQuery(limitMax), ...listQuerySchema(MESSAGE_WHITELIST) },
    { additionalProperties: false },
  );
}
