import type { Context } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import type { DomainEvent, EventName } from '../../events/bus.ts';
import type { KarmaRuleName } from './karma.rules.ts';
import {
  clearKarmaOfUser,
  compensateKarma,
  compensateReactionsBy,
  compensateReactionsOf,
  grantKarma,
  karmaRules,
} from './karma.service.ts';

/** Creation events that grant karma to the actor, with their rule. */
const AUTHOR_GRANTS: Partial<Record<EventName, KarmaRuleName>> = {
  postCreated: 'postCreated',
  commentCreated: 'commentCreated',
  mediaCreated: 'mediaCreated',
  networkCreated: 'networkCreated',
};

/** Deletion events that take back what their source granted, with the rule whose compensation they write. */
const COMPENSATIONS: Partial<Record<EventName, KarmaRuleName>> = {
  postDeleted: 'postCreated',
  commentDeleted: 'commentCreated',
  mediaDeleted: 'mediaCreated',
  networkDeleted: 'networkCreated',
  connectionDeleted: 'connectionConfirmed',
  emotionDeleted: 'emotionReceived',
};

/** Events the karma subscriber listens to. */
export const KARMA_EVENT_NAMES: EventName[] = [
  'postCreated',
  'postDeleted',
  'commentCreated',
  'commentDeleted',
  'mediaCreated',
  'mediaDeleted',
  'networkCreated',
  'networkDeleted',
  'connectionConfirmed',
  'connectionDeleted',
  'emotionCreated',
  'emotionDeleted',
  'userDeleted',
];

function text(data: DomainEvent['data'], key: string): string | undefined {
  const v = data?.[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The reaction a record comes from: its tag association, or (without one) the reacting user, emotion and target. */
function emotionSource(event: DomainEvent): string {
  return (
    text(event.data, 'association_uuid') ??
    `emotion:${event.actorUuid}:${text(event.data, 'emotion') ?? ''}:${event.targetUuid}`
  );
}

/** Applies the karma rules to one domain event, inside the writer's transaction. */
export async function handleKarmaEvent(ctx: Context, trx: Db, event: DomainEvent): Promise<void> {
  const target = { uuid: event.targetUuid, type: event.targetType };
  const authorRule = AUTHOR_GRANTS[event.name];
  if (authorRule) {
    await grantKarma(ctx, trx, {
      rule: authorRule,
      userUuid: event.actorUuid,
      targetUuid: event.targetUuid,
      targetType: event.targetType,
      sourceUuid: event.targetUuid,
    });
    return;
  }
  switch (event.name) {
    case 'connectionConfirmed': {
      // Both sides earn the points; locks are taken in uuid order so two confirmations cannot deadlock.
      const sides = [text(event.data, 'user_uuid'), text(event.data, 'target_user_uuid')].filter(
        (u): u is string => u !== undefined,
      );
      for (const userUuid of [...new Set(sides)].sort()) {
        await grantKarma(ctx, trx, {
          rule: 'connectionConfirmed',
          userUuid,
          targetUuid: event.targetUuid,
          targetType: event.targetType,
          sourceUuid: event.targetUuid,
        });
      }
      return;
    }
    case 'emotionCreated': {
      const author = text(event.data, 'author_uuid');
      // Reacting to one's own content earns nothing.
      if (!author || author === event.actorUuid) return;
      await grantKarma(ctx, trx, {
        rule: 'emotionReceived',
        userUuid: author,
        targetUuid: event.targetUuid,
        targetType: event.targetType,
        sourceUuid: emotionSource(event),
      });
      return;
    }
    case 'emotionDeleted': {
      await compensateKarma(ctx, trx, 'emotionReceived', emotionSource(event), target);
      return;
    }
    case 'userDeleted':
      await compensateReactionsBy(ctx, trx, event.targetUuid);
      await clearKarmaOfUser(trx, event.targetUuid);
      return;
    default: {
      const rule = COMPENSATIONS[event.name];
      if (rule) await compensateKarma(ctx, trx, rule, event.targetUuid, target);
      if (event.name === 'postDeleted' || event.name === 'commentDeleted') {
        await compensateReactionsOf(ctx, trx, target);
      }
    }
  }
}

/** Installs the karma subscriber; reads and validates KARMA_RULES first, so a bad file stops the start. */
export function subscribeKarma(ctx: Context): void {
  karmaRules(ctx);
  ctx.bus.on(KARMA_EVENT_NAMES, (trx, event) => handleKarmaEvent(ctx, trx, event));
}
