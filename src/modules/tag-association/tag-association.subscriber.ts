import type { Context } from '../../context.ts';
import { removeTargetTags, removeUserTags, syncContentTags } from './tag-association.service.ts';

/** Keeps hashtag and mention associations in step with posts and comments, inside each writer's transaction. */
export function subscribeTags(ctx: Context): void {
  ctx.bus.on(['postCreated', 'postUpdated'], (trx, e) =>
    syncContentTags(trx, 'post', e.targetUuid, e.name === 'postCreated'),
  );
  ctx.bus.on(['commentCreated', 'commentUpdated'], (trx, e) =>
    syncContentTags(trx, 'comment', e.targetUuid, e.name === 'commentCreated'),
  );
  ctx.bus.on(['postDeleted'], (trx, e) => removeTargetTags(trx, 'post', e.targetUuid));
  ctx.bus.on(['commentDeleted'], (trx, e) => removeTargetTags(trx, 'comment', e.targetUuid));
  ctx.bus.on(['mediaDeleted'], (trx, e) => removeTargetTags(trx, 'media', e.targetUuid));
  ctx.bus.on(['messageDeleted'], (trx, e) => removeTargetTags(trx, 'messages', e.targetUuid));
  ctx.bus.on(['networkDeleted'], (trx, e) => removeTargetTags(trx, 'network', e.targetUuid));
  ctx.bus.on(['userDeleted'], (trx, e) => removeUserTags(trx, e.targetUuid));
}
