import type { Context } from '../../context.ts';
import {
  followTargetLanguage,
  postTextOf,
  removeTargetTags,
  removeUserTags,
  syncContentTags,
} from './tag-association.service.ts';

/**
 * Keeps hashtag and mention associations in step with posts and comments, and every association's copy of its
 * target's language in step with a user's, inside each writer's transaction.
 */
export function subscribeTags(ctx: Context): void {
  const { dialect } = ctx;
  ctx.bus.on(['postCreated', 'postUpdated'], (trx, e) =>
    syncContentTags(trx, dialect, 'post', e.targetUuid, e.name === 'postCreated', postTextOf(e)),
  );
  ctx.bus.on(['commentCreated', 'commentUpdated'], (trx, e) =>
    syncContentTags(trx, dialect, 'comment', e.targetUuid, e.name === 'commentCreated'),
  );
  ctx.bus.on(['postDeleted'], (trx, e) => removeTargetTags(trx, dialect, 'post', e.targetUuid));
  ctx.bus.on(['commentDeleted'], (trx, e) => removeTargetTags(trx, dialect, 'comment', e.targetUuid));
  ctx.bus.on(['mediaDeleted'], (trx, e) => removeTargetTags(trx, dialect, 'media', e.targetUuid));
  ctx.bus.on(['messageDeleted'], (trx, e) => removeTargetTags(trx, dialect, 'messages', e.targetUuid));
  ctx.bus.on(['networkDeleted'], (trx, e) => removeTargetTags(trx, dialect, 'network', e.targetUuid));
  ctx.bus.on(['userUpdated'], (trx, e) => followTargetLanguage(trx, 'user', e.targetUuid, e.data?.language));
  ctx.bus.on(['userDeleted'], (trx, e) => removeUserTags(trx, dialect, e.targetUuid));
}
