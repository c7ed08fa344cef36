import type { Db } from '../db/database.ts';

/** Names of the domain events every write emits. */
export const EVENT_NAMES = [
  'postCreated',
  'postUpdated',
  'postDeleted',
  'commentCreated',
  'commentUpdated',
  'commentDeleted',
  'mediaCreated',
  'mediaDeleted',
  'networkCreated',
  'networkDeleted',
  'connectionConfirmed',
  'connectionDeleted',
  'emotionCreated',
  'emotionDeleted',
  'messageCreated',
  'messageDeleted',
  'userUpdated',
  'userDeleted',
] as const;

/** One of the domain event names. */
export type EventName = (typeof EVENT_NAMES)[number];

/** Kinds of item an event can be about. */
export type TargetType = 'user' | 'network' | 'post' | 'comment' | 'media' | 'messages' | 'connection';

/**
 * A domain event: who did what to which item. Subscribers load anything else they need through `trx`.
 *
 * Contract of each event (actor / target / data):
 * - postCreated: the author / the post ('post') / { body, language, visibility } as stored.
 * - postUpdated, postDeleted: the author / the post ('post') / none.
 * - commentCreated, commentUpdated, commentDeleted: the author / the comment ('comment') / { post_uuid }.
 * - mediaCreated, mediaDeleted: the owner / the media ('media') / none.
 * - networkCreated, networkDeleted: the creator / the network ('network') / none.
 * - connectionConfirmed, connectionDeleted: the user acting / the connection ('connection') /
 *   { user_uuid: requester, target_user_uuid: addressee }. connectionDeleted only for a confirmed connection.
 * - emotionCreated, emotionDeleted: the reacting user / the post or comment ('post' | 'comment') /
 *   { emotion, author_uuid: the content's author, association_uuid }. In emotionDeleted author_uuid is null when
 *   the reacted content is already gone (a reaction removed after its post or comment was deleted).
 * - messageCreated, messageDeleted: the sender / the message ('messages') / { recipient_uuid }.
 * - userUpdated: the user / the user ('user') / { language } as stored; only when the update set the language.
 * - userDeleted: the user / the user ('user') / none.
 * Deleted events are emitted before the row is removed, in the same transaction, so subscribers can still read it.
 */
export interface DomainEvent {
  name: EventName;
  /** The user who caused the event. */
  actorUuid: string;
  targetUuid: string;
  targetType: TargetType;
  /**
   * Event-specific facts the target row no longer holds (e.g. the other side of a connection, the reacted content's
   * author), or what the writer just stored (a new post's text), so subscribers need not read it back.
   */
  data?: Record<string, string | number | null>;
}

/** A subscriber runs inside the writer's transaction; throwing rolls the whole write back. */
export type Subscriber = (trx: Db, event: DomainEvent) => Promise<void>;

/** In-process domain event bus: subscribers run in order, in the caller's transaction. */
export class EventBus {
  readonly #subscribers = new Map<EventName, Subscriber[]>();

  /** Registers a subscriber for some events. */
  on(names: readonly EventName[], subscriber: Subscriber): void {
    for (const name of names) {
      const list = this.#subscribers.get(name) ?? [];
      list.push(subscriber);
      this.#subscribers.set(name, list);
    }
  }

  /** Runs every subscriber of the event inside `trx`; the writer must call this before its transaction commits. */
  async emit(trx: Db, event: DomainEvent): Promise<void> {
    for (const subscriber of this.#subscribers.get(event.name) ?? []) await subscriber(trx, event);
  }
}
