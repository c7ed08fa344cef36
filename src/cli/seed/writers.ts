// The two ways the world generator writes a batch:
// - EventWriter: the API's own path, one row at a time through the module repositories, each write's domain event
//   emitted on ctx.bus inside the batch transaction (karma, tags and the search index done by their subscribers).
// - BulkWriter: many rows per statement, with set-based equivalents of the subscribers (the same tag store
//   functions, the karma rules and daily cap applied in memory); the search index follows through its triggers.
import type { Insertable } from 'kysely';
import type { Context } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import { insertComment } from '../../modules/comment/comment.repository.ts';
import type { CommentTable } from '../../modules/comment/comment.table.ts';
import { insertConnection, insertFriendPair } from '../../modules/connection/connection.repository.ts';
import type { KarmaRuleName } from '../../modules/karma/karma.rules.ts';
import { karmaRules } from '../../modules/karma/karma.service.ts';
import type { KarmaTable } from '../../modules/karma/karma.table.ts';
import { insertMedia } from '../../modules/media/media.repository.ts';
import type { MediaTable } from '../../modules/media/media.table.ts';
import { insertMessage } from '../../modules/message/message.repository.ts';
import type { MessageTable } from '../../modules/message/message.table.ts';
import { insertNetwork } from '../../modules/network/network.repository.ts';
import type { NetworkTable } from '../../modules/network/network.table.ts';
import { insertPost } from '../../modules/post/post.repository.ts';
import type { PostTable } from '../../modules/post/post.table.ts';
import { extractHashtags, extractMentions, type FoundName } from '../../modules/tag/extract.ts';
import { normalizeTagName } from '../../modules/tag/normalize.ts';
import { adjustTagCounts, type TagRow } from '../../modules/tag/tag.repository.ts';
import { ensureEmotionTag, ensureTags } from '../../modules/tag/tag.service.ts';
import { insertAssociationsIgnoringConflicts } from '../../modules/tag-association/tag-association.repository.ts';
import type { TagAssociationTable } from '../../modules/tag-association/tag-association.table.ts';
import { insertUser } from '../../modules/user/user.repository.ts';
import type { UserTable } from '../../modules/user/user.table.ts';
import { addToUsersKarma, insertRows } from './seed.repository.ts';

/** A confirmed connection: `requester` asked, `addressee` confirmed. */
export interface SeedConnection {
  uuid: string;
  requester: string;
  addressee: string;
  pairKey: string;
  time: string;
}

/** An emotion reaction of `userUuid` to a post. */
export interface SeedReaction {
  userUuid: string;
  emotion: string;
  postUuid: string;
  postAuthor: string;
  language: string;
}

/** Writes one batch of each kind inside the batch's transaction. */
export interface WorldWriter {
  users(trx: Db, rows: UserTable[]): Promise<void>;
  networks(trx: Db, rows: Insertable<NetworkTable>[]): Promise<void>;
  connections(trx: Db, rows: SeedConnection[]): Promise<void>;
  posts(trx: Db, rows: Insertable<PostTable>[]): Promise<void>;
  comments(trx: Db, rows: Insertable<CommentTable>[]): Promise<void>;
  /** Returns how many reactions were new (one per user, emotion and post). */
  reactions(trx: Db, items: SeedReaction[]): Promise<number>;
  media(trx: Db, rows: Insertable<MediaTable>[]): Promise<void>;
  messages(trx: Db, rows: Insertable<MessageTable>[]): Promise<void>;
}

/** The API's own write path: repositories row by row, domain events on ctx.bus. */
export class EventWriter implements WorldWriter {
  readonly #ctx: Context;

  constructor(ctx: Context) {
    this.#ctx = ctx;
  }

  async users(trx: Db, rows: UserTable[]): Promise<void> {
    for (const row of rows) await insertUser(trx, row);
  }

  async networks(trx: Db, rows: Insertable<NetworkTable>[]): Promise<void> {
    for (const row of rows) {
      await insertNetwork(trx, row);
      await this.#ctx.bus.emit(trx, {
        name: 'networkCreated',
        actorUuid: row.user_uuid,
        targetUuid: row.uuid,
        targetType: 'network',
      });
    }
  }

  async connections(trx: Db, rows: SeedConnection[]): Promise<void> {
    for (const c of rows) {
      await insertConnection(trx, {
        uuid: c.uuid,
        user_uuid: c.requester,
        target_user_uuid: c.addressee,
        pair_key: c.pairKey,
        status: 'confirmed',
        created_at: c.time,
        updated_at: c.time,
      });
      await insertFriendPair(trx, c.requester, c.addressee);
      await this.#ctx.bus.emit(trx, {
        name: 'connectionConfirmed',
        actorUuid: c.addressee,
        targetUuid: c.uuid,
        targetType: 'connection',
        data: { user_uuid: c.requester, target_user_uuid: c.addressee },
      });
    }
  }

  async posts(trx: Db, rows: Insertable<PostTable>[]): Promise<void> {
    for (const row of rows) {
      await insertPost(trx, row);
      await this.#ctx.bus.emit(trx, {
        name: 'postCreated',
        actorUuid: row.user_uuid,
        targetUuid: row.uuid,
        targetType: 'post',
      });
    }
  }

  async comments(trx: Db, rows: Insertable<CommentTable>[]): Promise<void> {
    for (const row of rows) {
      await insertComment(trx, row);
      await this.#ctx.bus.emit(trx, {
        name: 'commentCreated',
        actorUuid: row.user_uuid,
        targetUuid: row.uuid,
        targetType: 'comment',
        data: { post_uuid: row.post_uuid },
      });
    }
  }

  /** The same steps as POST /posts/{uuid}/emotions: the association, the tag's count, emotionCreated. */
  async reactions(trx: Db, items: SeedReaction[]): Promise<number> {
    let added = 0;
    for (const r of items) {
      const tag = await ensureEmotionTag(trx, r.emotion);
      const now = nowIso();
      const uuid = uuidv7();
      const inserted = await insertAssociationsIgnoringConflicts(trx, [
        {
          uuid,
          tag_uuid: tag.uuid,
          user_uuid: r.userUuid,
          target_uuid: r.postUuid,
          target_type: 'post',
          language: r.language,
          created_at: now,
          updated_at: now,
        },
      ]);
      if (inserted.length === 0) continue; // this user already reacted so to this post
      await adjustTagCounts(trx, new Map([[tag.uuid, 1]]));
      await this.#ctx.bus.emit(trx, {
        name: 'emotionCreated',
        actorUuid: r.userUuid,
        targetUuid: r.postUuid,
        targetType: 'post',
        data: { emotion: tag.name_key, author_uuid: r.postAuthor, association_uuid: uuid },
      });
      added++;
    }
    return added;
  }

  async media(trx: Db, rows: Insertable<MediaTable>[]): Promise<void> {
    for (const row of rows) {
      await insertMedia(trx, row);
      await this.#ctx.bus.emit(trx, {
        name: 'mediaCreated',
        actorUuid: row.user_uuid,
        targetUuid: row.uuid,
        targetType: 'media',
      });
    }
  }

  async messages(trx: Db, rows: Insertable<MessageTable>[]): Promise<void> {
    for (const row of rows) {
      await insertMessage(trx, row);
      await this.#ctx.bus.emit(trx, {
        name: 'messageCreated',
        actorUuid: row.user_uuid,
        targetUuid: row.uuid,
        targetType: 'messages',
        data: { recipient_uuid: row.recipient_uuid },
      });
    }
  }
}

/** One karma grant the bulk path owes: what grantKarma would be called with. */
interface Grant {
  rule: KarmaRuleName;
  userUuid: string;
  targetUuid: string;
  targetType: string;
  sourceUuid: string;
}

/**
 * Many rows per statement. Tags: the tag store's own ensureTags, insertAssociationsIgnoringConflicts and
 * adjustTagCounts over the whole batch. Karma: the configured rules and daily cap applied in memory, in the order the
 * events would have come (the seeder only writes into an empty database, so every count starts at zero), records
 * inserted together and the users' totals raised together. Networks, media and messages are few: they take the
 * event path.
 */
export class BulkWriter implements WorldWriter {
  readonly #ctx: Context;
  readonly #events: EventWriter;
  /** Usernames by lowercase key, to resolve @mentions as the tag subscriber does. */
  readonly #usernames: Map<string, string>;
  /** `add` records per user and rule in the current UTC day (the daily cap). */
  readonly #today = new Map<string, number>();
  #day = '';
  readonly #emotionTags = new Map<string, TagRow>();

  constructor(ctx: Context, usernames: Map<string, string>) {
    this.#ctx = ctx;
    this.#events = new EventWriter(ctx);
    this.#usernames = usernames;
  }

  async users(trx: Db, rows: UserTable[]): Promise<void> {
    await insertRows(trx, 'users', rows);
  }

  networks(trx: Db, rows: Insertable<NetworkTable>[]): Promise<void> {
    return this.#events.networks(trx, rows);
  }

  async connections(trx: Db, rows: SeedConnection[]): Promise<void> {
    await insertRows(
      trx,
      'connections',
      rows.map((c) => ({
        uuid: c.uuid,
        user_uuid: c.requester,
        target_user_uuid: c.addressee,
        pair_key: c.pairKey,
        status: 'confirmed',
        created_at: c.time,
        updated_at: c.time,
      })),
    );
    await insertRows(
      trx,
      'friends',
      rows.flatMap((c) => [
        { user_uuid: c.requester, friend_uuid: c.addressee },
        { user_uuid: c.addressee, friend_uuid: c.requester },
      ]),
    );
    await this.#grant(
      trx,
      rows.flatMap((c) =>
        [c.requester, c.addressee].sort().map((userUuid) => ({
          rule: 'connectionConfirmed' as const,
          userUuid,
          targetUuid: c.uuid,
          targetType: 'connection',
          sourceUuid: c.uuid,
        })),
      ),
    );
  }

  async posts(trx: Db, rows: Insertable<PostTable>[]): Promise<void> {
    await insertRows(trx, 'posts', rows);
    await this.#grant(
      trx,
      rows.map((r) => ({
        rule: 'postCreated' as const,
        userUuid: r.user_uuid,
        targetUuid: r.uuid,
        targetType: 'post',
        sourceUuid: r.uuid,
      })),
    );
    await this.#extractTags(trx, 'post', rows);
  }

  async comments(trx: Db, rows: Insertable<CommentTable>[]): Promise<void> {
    await insertRows(trx, 'comments', rows);
    await this.#grant(
      trx,
      rows.map((r) => ({
        rule: 'commentCreated' as const,
        userUuid: r.user_uuid,
        targetUuid: r.uuid,
        targetType: 'comment',
        sourceUuid: r.uuid,
      })),
    );
    await this.#extractTags(trx, 'comment', rows);
  }

  async reactions(trx: Db, items: SeedReaction[]): Promise<number> {
    const rows: Insertable<TagAssociationTable>[] = [];
    const seen = new Set<string>();
    const grants: Grant[] = [];
    const counts = new Map<string, number>();
    const now = nowIso();
    for (const r of items) {
      const tag = await this.#emotionTag(trx, r.emotion);
      const key = `${tag.uuid}:${r.postUuid}:${r.userUuid}`;
      // Seeded reactions target posts of the current batch only, so duplicates can only be within it.
      if (seen.has(key)) continue;
      seen.add(key);
      const uuid = uuidv7();
      rows.push({
        uuid,
        tag_uuid: tag.uuid,
        user_uuid: r.userUuid,
        target_uuid: r.postUuid,
        target_type: 'post',
        language: r.language,
        created_at: now,
        updated_at: now,
      });
      counts.set(tag.uuid, (counts.get(tag.uuid) ?? 0) + 1);
      // Reacting to one's own content earns nothing (the karma subscriber's rule).
      if (r.postAuthor !== r.userUuid) {
        grants.push({
          rule: 'emotionReceived',
          userUuid: r.postAuthor,
          targetUuid: r.postUuid,
          targetType: 'post',
          sourceUuid: uuid,
        });
      }
    }
    await insertRows(trx, 'tag_associations', rows);
    await adjustTagCounts(trx, counts);
    await this.#grant(trx, grants);
    return rows.length;
  }

  media(trx: Db, rows: Insertable<MediaTable>[]): Promise<void> {
    return this.#events.media(trx, rows);
  }

  messages(trx: Db, rows: Insertable<MessageTable>[]): Promise<void> {
    return this.#events.messages(trx, rows);
  }

  async #emotionTag(trx: Db, emotion: string): Promise<TagRow> {
    let tag = this.#emotionTags.get(emotion);
    if (!tag) {
      tag = await ensureEmotionTag(trx, emotion);
      this.#emotionTags.set(emotion, tag);
    }
    return tag;
  }

  /** What the tag subscriber does on postCreated/commentCreated, for a whole batch at once. */
  async #extractTags(
    trx: Db,
    kind: 'post' | 'comment',
    rows: { uuid: string; user_uuid: string; body: string; language: string }[],
  ): Promise<void> {
    const perRow = rows.map((r) => ({
      row: r,
      hashtags: extractHashtags(r.body),
      mentions: extractMentions(r.body).flatMap((name): FoundName[] => {
        const username = this.#usernames.get(name.toLowerCase());
        return username ? [{ name: username, key: normalizeTagName(username) }] : [];
      }),
    }));
    const distinct = (names: FoundName[]) => [...new Map(names.map((n) => [n.key, n])).values()];
    const hashtags = await ensureTags(trx, 'hashtag', distinct(perRow.flatMap((p) => p.hashtags)));
    const mentions = await ensureTags(trx, 'mention', distinct(perRow.flatMap((p) => p.mentions)));
    const hashtagByKey = new Map(hashtags.map((t) => [t.name_key, t.uuid]));
    const mentionByKey = new Map(mentions.map((t) => [t.name_key, t.uuid]));
    const now = nowIso();
    const associations: Insertable<TagAssociationTable>[] = [];
    const counts = new Map<string, number>();
    for (const p of perRow) {
      const tagUuids = new Set([
        ...p.hashtags.map((h) => hashtagByKey.get(h.key)),
        ...p.mentions.map((m) => mentionByKey.get(m.key)),
      ]);
      for (const tagUuid of tagUuids) {
        if (!tagUuid) continue;
        associations.push({
          uuid: uuidv7(),
          tag_uuid: tagUuid,
          user_uuid: p.row.user_uuid,
          target_uuid: p.row.uuid,
          target_type: kind,
          language: p.row.language,
          created_at: now,
          updated_at: now,
        });
        counts.set(tagUuid, (counts.get(tagUuid) ?? 0) + 1);
      }
    }
    await insertRows(trx, 'tag_associations', associations);
    await adjustTagCounts(trx, counts);
  }

  /** What grantKarma does for each grant, in order: the rule's points, 0 past the daily cap; totals raised once. */
  async #grant(trx: Db, grants: Grant[]): Promise<void> {
    if (grants.length === 0) return;
    const rules = karmaRules(this.#ctx);
    const now = nowIso();
    const day = now.slice(0, 10);
    if (day !== this.#day) {
      this.#day = day;
      this.#today.clear();
    }
    const records: Insertable<KarmaTable>[] = [];
    const deltas = new Map<string, number>();
    for (const g of grants) {
      const rule = rules[g.rule];
      const key = `${g.userUuid}:${g.rule}`;
      const today = this.#today.get(key) ?? 0;
      this.#today.set(key, today + 1);
      const points = rule.dailyCap !== null && today >= rule.dailyCap ? 0 : rule.points;
      records.push({
        uuid: uuidv7(),
        user_uuid: g.userUuid,
        event: g.rule,
        target_uuid: g.targetUuid,
        target_type: g.targetType,
        karma_type: 'add',
        points,
        source_uuid: g.sourceUuid,
        created_at: now,
        updated_at: now,
      });
      deltas.set(g.userUuid, (deltas.get(g.userUuid) ?? 0) + points);
    }
    await insertRows(trx, 'karma', records);
    await addToUsersKarma(trx, this.#ctx.dialect, deltas);
  }
}
