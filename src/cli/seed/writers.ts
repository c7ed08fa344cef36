// The two ways the world generator writes a batch. The generator stages each batch's rows in generation order (a
// writer plans what it can synchronously there, e.g. karma points under the daily cap); the batch is then written in
// one transaction:
// - EventWriter: the API's own path, one row at a time through the module repositories, each write's domain event
//   emitted on ctx.bus inside the batch transaction (karma, tags and the search index done by their subscribers and
//   triggers).
// - BulkWriter: many rows per statement, with set-based equivalents of the subscribers (the same tag store
//   functions, the karma rules and daily cap applied in memory), secondary indexes and search triggers set aside
//   for the load and rebuilt at the end; on PostgreSQL two batch transactions at once.
// Both end with the search index rebuilt from the base tables in creation order (rebuildIndex), as `search reindex`
// does. The generator writes kind after kind (every post, then every media item, then every message), each spread
// over the seeded year, where the API indexes each item as it is created: indexed in write order, a January message
// got an id above every December post, so `order=created_at` (the index order) listed it first, and the ranking's
// recent window (the newest ids) held a year of messages instead of the newest documents (docs/search.md, "The
// index order is the creation order").
import type { Insertable } from 'kysely';
import type { Context } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import { insertComment } from '../../modules/comment/comment.repository.ts';
import type { CommentTable } from '../../modules/comment/comment.table.ts';
import { insertConnection, insertFriendPair } from '../../modules/connection/connection.repository.ts';
import { addRecord, type Grant, karmaRules, pointsUnderCap } from '../../modules/karma/karma.service.ts';
import type { KarmaTable } from '../../modules/karma/karma.table.ts';
import { insertMedia } from '../../modules/media/media.repository.ts';
import type { MediaTable } from '../../modules/media/media.table.ts';
import { insertMessage } from '../../modules/message/message.repository.ts';
import type { MessageTable } from '../../modules/message/message.table.ts';
import { insertNetwork } from '../../modules/network/network.repository.ts';
import type { NetworkTable } from '../../modules/network/network.table.ts';
import { insertPost } from '../../modules/post/post.repository.ts';
import type { PostTable } from '../../modules/post/post.table.ts';
import { rebuildIndex } from '../../modules/search/search-index.repository.ts';
import { extractHashtags, extractMentions, type FoundName } from '../../modules/tag/extract.ts';
import { normalizeTagName, type TagType } from '../../modules/tag/normalize.ts';
import { insertAssociationsCounted } from '../../modules/tag/tag.repository.ts';
import { ensureEmotionTag, ensureTags } from '../../modules/tag/tag.service.ts';
import type { TagAssociationTable } from '../../modules/tag-association/tag-association.table.ts';
import { insertUser } from '../../modules/user/user.repository.ts';
import type { UserTable } from '../../modules/user/user.table.ts';
import {
  addToTagCounts,
  addToUsersKarma,
  RowInserter,
  restoreSchema,
  SEARCH_TABLES,
  type SuspendedIndex,
  type SuspendedSchema,
  sqliteForeignKeys,
  suspendSchema,
} from './seed.repository.ts';

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

/** Called while the writer finishes: a step name, the units done in it and its total. */
export type FinishProgress = (step: string, done: number, total: number) => void;

/** One batch: rows staged in generation order, then written in one transaction. */
export interface WorldBatch {
  users(rows: UserTable[]): void;
  networks(rows: Insertable<NetworkTable>[]): void;
  connections(rows: SeedConnection[]): void;
  posts(rows: Insertable<PostTable>[]): void;
  comments(rows: Insertable<CommentTable>[]): void;
  reactions(items: SeedReaction[]): void;
  media(rows: Insertable<MediaTable>[]): void;
  messages(rows: Insertable<MessageTable>[]): void;
  /** Runs before the batch's transaction, in its own. */
  prepare(db: Db): Promise<void>;
  /** Writes what was staged inside `trx`; returns how many reactions were new (one per user, emotion and post). */
  write(trx: Db): Promise<number>;
  /** Called once the batch's transaction committed. */
  committed(): void;
}

/** Stores a world batch by batch. */
export interface WorldWriter {
  /** How many batch transactions may be open at once. */
  readonly concurrency: number;
  /** Prepares the database before the first batch. */
  begin(db: Db): Promise<void>;
  /** A new, empty batch; batches must be staged in generation order. */
  batch(): WorldBatch;
  /** Completes what the batches left to do after the last one; runs even when a batch failed (`failed`). */
  finish(db: Db, progress: FinishProgress, failed: boolean): Promise<void>;
}

/** Writes one staged kind of rows inside the batch transaction; returns the new reactions, if it wrote any. */
type Step = (trx: Db) => Promise<number | undefined>;

/** How a writer turns each kind of staged rows into its step (planning what it can right away). */
type Stager = {
  [K in Exclude<keyof WorldBatch, 'prepare' | 'write' | 'committed'>]: (
    rows: Parameters<WorldBatch[K]>[0],
  ) => Step;
};

/** A batch as an ordered list of steps, each planned when its rows were staged. */
class StepBatch implements WorldBatch {
  readonly #steps: Step[] = [];
  readonly #stager: Stager;
  readonly #prepare: (db: Db) => Promise<void>;
  readonly #onCommit: () => void;

  constructor(
    stager: Stager,
    prepare: (db: Db) => Promise<void> = async () => {},
    onCommit: () => void = () => {},
  ) {
    this.#stager = stager;
    this.#prepare = prepare;
    this.#onCommit = onCommit;
  }

  prepare(db: Db): Promise<void> {
    return this.#prepare(db);
  }

  users(rows: UserTable[]): void {
    this.#steps.push(this.#stager.users(rows));
  }

  networks(rows: Insertable<NetworkTable>[]): void {
    this.#steps.push(this.#stager.networks(rows));
  }

  connections(rows: SeedConnection[]): void {
    this.#steps.push(this.#stager.connections(rows));
  }

  posts(rows: Insertable<PostTable>[]): void {
    this.#steps.push(this.#stager.posts(rows));
  }

  comments(rows: Insertable<CommentTable>[]): void {
    this.#steps.push(this.#stager.comments(rows));
  }

  reactions(items: SeedReaction[]): void {
    this.#steps.push(this.#stager.reactions(items));
  }

  media(rows: Insertable<MediaTable>[]): void {
    this.#steps.push(this.#stager.media(rows));
  }

  messages(rows: Insertable<MessageTable>[]): void {
    this.#steps.push(this.#stager.messages(rows));
  }

  async write(trx: Db): Promise<number> {
    let added = 0;
    for (const step of this.#steps) added += (await step(trx)) ?? 0;
    return added;
  }

  committed(): void {
    this.#onCommit();
  }
}

/** Runs an async write and reports no reactions. */
const quiet =
  (write: (trx: Db) => Promise<unknown>): Step =>
  async (trx) => {
    await write(trx);
    return undefined;
  };

/** The API's own write path: repositories row by row, domain events on ctx.bus; one batch at a time. */
export class EventWriter implements WorldWriter {
  readonly concurrency = 1;
  readonly #ctx: Context;
  readonly #rebuild: boolean;

  /** `rebuild`: rebuild the search index in creation order at the end (see the top of this file). */
  constructor(ctx: Context, options: { rebuild: boolean }) {
    this.#ctx = ctx;
    this.#rebuild = options.rebuild;
  }

  async begin(): Promise<void> {}

  /**
   * Rebuilds the search index in creation order, unless a batch failed: the error that stopped the load is then the
   * one reported, and the index the triggers wrote matches what was written.
   */
  async finish(db: Db, progress: FinishProgress, failed: boolean): Promise<void> {
    if (!this.#rebuild || failed) return;
    const dialect = this.#ctx.dialect;
    progress('search index', 0, 1);
    await db.transaction().execute((trx) => rebuildIndex(trx, dialect));
    progress('search index', 1, 1);
  }

  batch(): WorldBatch {
    return new StepBatch({
      users: (rows) => quiet((trx) => this.#users(trx, rows)),
      networks: (rows) => quiet((trx) => this.#networks(trx, rows)),
      connections: (rows) => quiet((trx) => this.#connections(trx, rows)),
      posts: (rows) => quiet((trx) => this.#posts(trx, rows)),
      comments: (rows) => quiet((trx) => this.#comments(trx, rows)),
      reactions: (items) => (trx) => this.#reactions(trx, items),
      media: (rows) => quiet((trx) => this.#media(trx, rows)),
      messages: (rows) => quiet((trx) => this.#messages(trx, rows)),
    });
  }

  async #users(trx: Db, rows: UserTable[]): Promise<void> {
    for (const row of rows) await insertUser(trx, row);
  }

  async #networks(trx: Db, rows: Insertable<NetworkTable>[]): Promise<void> {
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

  async #connections(trx: Db, rows: SeedConnection[]): Promise<void> {
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

  async #posts(trx: Db, rows: Insertable<PostTable>[]): Promise<void> {
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

  async #comments(trx: Db, rows: Insertable<CommentTable>[]): Promise<void> {
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
  async #reactions(trx: Db, items: SeedReaction[]): Promise<number> {
    let added = 0;
    for (const r of items) {
      const tag = await ensureEmotionTag(trx, r.emotion);
      const now = nowIso();
      const uuid = uuidv7();
      const inserted = await insertAssociationsCounted(trx, this.#ctx.dialect, [
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

  async #media(trx: Db, rows: Insertable<MediaTable>[]): Promise<void> {
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

  async #messages(trx: Db, rows: Insertable<MessageTable>[]): Promise<void> {
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

/** Tables the bulk path fills: their secondary indexes and search triggers are set aside while it runs. */
const BULK_TABLES = [
  'users',
  'networks',
  'connections',
  'friends',
  'posts',
  'comments',
  'media',
  'messages',
  'karma',
  'tags',
  'tag_associations',
  'search_docs',
  'search_names',
];

/** Tag types in the order every batch creates missing tags (one order for all: concurrent batches cannot deadlock). */
const TAG_TYPE_ORDER: TagType[] = ['emotion', 'hashtag', 'mention'];

/** What one bulk batch owes and needs. */
interface BulkBatchState {
  /** Deltas of users' karma totals and tags' association counts, added to the writer's once committed. */
  karma: Map<string, number>;
  tagCounts: Map<string, number>;
  /** Tags the batch uses, by type and key; their uuids by `type:key` once its first step created them. */
  names: Map<TagType, Map<string, FoundName>>;
  tags: Map<string, string>;
}

/** A staged association whose tag uuid is known once the batch's tags exist. */
interface PendingAssociation {
  tag: string;
  row: Omit<Insertable<TagAssociationTable>, 'tag_uuid'>;
}

/**
 * Many rows per statement, and set-based equivalents of the subscribers. Tags: the tag store's own ensureTags for
 * all the names of a batch (its first step, in one fixed order), associations inserted together. Karma: the
 * configured rules and daily cap applied in memory while staging, in the order the events would have come (the
 * seeder only writes into an empty database, so every count starts at zero), records inserted together. Users'
 * karma totals and tags' association counts are raised once per user and tag in finish (each batch touches about a
 * fifth of all users: rewriting those rows in every batch was most of PostgreSQL's work on the users table).
 *
 * From begin to finish the secondary indexes of the filled tables are dropped, and so are PostgreSQL's foreign keys
 * (SQLite's are switched off on the connection). The search triggers of the base tables are off as well, and finish
 * builds the search index with the search module's own rebuild, in creation order (see the top of this file). On
 * PostgreSQL two batch transactions run at once. Every other trigger (e.g. the associations' audience copy of
 * migration 0006) stays on. finish then recreates every trigger, index and foreign key from the definitions it saved
 * (adding a foreign key checks all its rows), so the end state is the migrated schema holding the rows the event
 * path would have written.
 */
export class BulkWriter implements WorldWriter {
  readonly concurrency: number;
  readonly #ctx: Context;
  readonly #rows: RowInserter;
  #suspended: SuspendedSchema | undefined;
  /** Usernames by lowercase key, to resolve @mentions as the tag subscriber does. */
  readonly #usernames: Map<string, string>;
  /**
   * `add` records per user and rule (the daily cap), over the whole load as one day: a seed running past midnight
   * would otherwise start the caps again and give another world for the same seed.
   */
  readonly #today = new Map<string, number>();
  /** Karma and association-count deltas of the committed batches. */
  readonly #karma = new Map<string, number>();
  readonly #tagCounts = new Map<string, number>();

  constructor(ctx: Context, usernames: Map<string, string>) {
    this.#ctx = ctx;
    this.#rows = new RowInserter(ctx.dialect);
    this.#usernames = usernames;
    // SQLite has one writer; PostgreSQL spreads the work of two batches over two backends.
    this.concurrency = ctx.dialect === 'postgres' ? 2 : 1;
  }

  async begin(db: Db): Promise<void> {
    const dialect = this.#ctx.dialect;
    if (dialect === 'sqlite') await sqliteForeignKeys(db, false);
    this.#suspended = await db
      .transaction()
      .execute((trx) => suspendSchema(trx, dialect, BULK_TABLES, { searchTriggers: true }));
  }

  batch(): WorldBatch {
    const state: BulkBatchState = {
      karma: new Map(),
      tagCounts: new Map(),
      names: new Map(),
      tags: new Map(),
    };
    // Every tag the batch uses exists before its transaction, created in a short one of its own, in
    // TAG_TYPE_ORDER and key order: inside the batch transaction, a tag new to two concurrent batches made the second
    // wait for the whole first. (A batch that then fails leaves its new tags without associations, like a tag
    // created through POST /tags.)
    const ensureBatchTags = (db: Db) =>
      db.transaction().execute(async (trx) => {
        for (const type of TAG_TYPE_ORDER) {
          const names = [...(state.names.get(type)?.values() ?? [])].sort((a, b) => (a.key < b.key ? -1 : 1));
          if (names.length === 0) continue;
          for (const tag of await ensureTags(trx, type, names))
            state.tags.set(`${type}:${tag.name_key}`, tag.uuid);
        }
      });
    return new StepBatch(
      {
        users: (rows) => quiet((trx) => this.#rows.insert(trx, 'users', rows)),
        networks: (rows) => this.#networks(state, rows),
        connections: (rows) => this.#connections(state, rows),
        posts: (rows) => this.#content(state, 'post', rows),
        comments: (rows) => this.#content(state, 'comment', rows),
        reactions: (items) => this.#reactions(state, items),
        media: (rows) => this.#media(state, rows),
        // messageCreated has no subscriber; the search index follows from the base table.
        messages: (rows) => quiet((trx) => this.#rows.insert(trx, 'messages', rows)),
      },
      ensureBatchTags,
      () => {
        addDeltas(this.#karma, state.karma);
        addDeltas(this.#tagCounts, state.tagCounts);
      },
    );
  }

  /**
   * Raises the totals of the committed batches, then runs two independent streams, concurrent on PostgreSQL (one
   * connection and core each; SQLite runs them one after the other): the search index rebuilt from the base tables
   * in creation order and its own indexes; the triggers, every other index and the foreign keys. Both run to the end
   * even if the other fails, and after a failed batch too: the schema is whole again whatever was written.
   */
  async finish(db: Db, progress: FinishProgress): Promise<void> {
    const suspended = this.#suspended;
    if (!suspended) return;
    this.#suspended = undefined;
    const dialect = this.#ctx.dialect;
    // Totals of the committed batches only (a failed batch's deltas never reached them).
    await db.transaction().execute(async (trx) => {
      await addToUsersKarma(trx, dialect, this.#karma);
      await addToTagCounts(trx, dialect, this.#tagCounts);
    });
    const total = suspended.indexes.length;
    let built = 0;
    const onIndex = () => progress('indexes', ++built, total);
    progress('indexes', 0, total);
    const isSearch = (i: SuspendedIndex) => SEARCH_TABLES.includes(i.table);
    const search = async () => {
      if (suspended.search) {
        progress('search index', 0, 1);
        await db.transaction().execute((trx) => rebuildIndex(trx, dialect));
        progress('search index', 1, 1);
      }
      const statements = { triggers: [], indexes: suspended.indexes.filter(isSearch), foreignKeys: [] };
      await db.transaction().execute((trx) => restoreSchema(trx, dialect, statements, onIndex));
    };
    const rest = async () => {
      const statements = {
        triggers: suspended.triggers,
        indexes: suspended.indexes.filter((i) => !isSearch(i)),
        foreignKeys: suspended.foreignKeys,
      };
      await db.transaction().execute((trx) => restoreSchema(trx, dialect, statements, onIndex));
    };
    const results = await Promise.allSettled([search(), rest()]);
    for (const r of results) if (r.status === 'rejected') throw r.reason;
    if (dialect === 'sqlite') await sqliteForeignKeys(db, true);
  }

  #networks(state: BulkBatchState, rows: Insertable<NetworkTable>[]): Step {
    const karma = this.#grant(
      state,
      rows.map((r) => ({
        rule: 'networkCreated' as const,
        userUuid: r.user_uuid,
        targetUuid: r.uuid,
        targetType: 'network',
        sourceUuid: r.uuid,
      })),
    );
    return quiet(async (trx) => {
      await this.#rows.insert(trx, 'networks', rows);
      await this.#rows.insert(trx, 'karma', karma);
    });
  }

  #connections(state: BulkBatchState, rows: SeedConnection[]): Step {
    const karma = this.#grant(
      state,
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
    return quiet(async (trx) => {
      await this.#rows.insert(
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
      await this.#rows.insert(
        trx,
        'friends',
        rows.flatMap((c) => [
          { user_uuid: c.requester, friend_uuid: c.addressee },
          { user_uuid: c.addressee, friend_uuid: c.requester },
        ]),
      );
      await this.#rows.insert(trx, 'karma', karma);
    });
  }

  /** Posts or comments: the rows, their creation karma, and what the tag subscriber extracts from their bodies. */
  #content(
    state: BulkBatchState,
    kind: 'post' | 'comment',
    rows: (Insertable<PostTable> | Insertable<CommentTable>)[],
  ): Step {
    const karma = this.#grant(
      state,
      rows.map((r) => ({
        rule: kind === 'post' ? ('postCreated' as const) : ('commentCreated' as const),
        userUuid: r.user_uuid,
        targetUuid: r.uuid,
        targetType: kind,
        sourceUuid: r.uuid,
      })),
    );
    const associations = this.#extractTags(state, kind, rows);
    return quiet(async (trx) => {
      if (kind === 'post') await this.#rows.insert(trx, 'posts', rows as Insertable<PostTable>[]);
      else await this.#rows.insert(trx, 'comments', rows as Insertable<CommentTable>[]);
      await this.#rows.insert(trx, 'karma', karma);
      await this.#insertAssociations(trx, state, associations);
    });
  }

  /** The same steps as POST /posts/{uuid}/emotions, for a batch: associations, tag counts, emotionReceived karma. */
  #reactions(state: BulkBatchState, items: SeedReaction[]): Step {
    const associations: PendingAssociation[] = [];
    const seen = new Set<string>();
    const grants: Grant[] = [];
    const now = nowIso();
    for (const r of items) {
      const name = { name: r.emotion, key: normalizeTagName(r.emotion) };
      const key = `${name.key}:${r.postUuid}:${r.userUuid}`;
      // Seeded reactions target posts of the current batch only, so duplicates can only be within it.
      if (seen.has(key)) continue;
      seen.add(key);
      const tag = this.#needTag(state, 'emotion', name);
      const uuid = uuidv7();
      associations.push({
        tag,
        row: {
          uuid,
          user_uuid: r.userUuid,
          target_uuid: r.postUuid,
          target_type: 'post',
          language: r.language,
          created_at: now,
          updated_at: now,
        },
      });
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
    const karma = this.#grant(state, grants);
    return async (trx) => {
      await this.#insertAssociations(trx, state, associations);
      await this.#rows.insert(trx, 'karma', karma);
      return associations.length;
    };
  }

  #media(state: BulkBatchState, rows: Insertable<MediaTable>[]): Step {
    const karma = this.#grant(
      state,
      rows.map((r) => ({
        rule: 'mediaCreated' as const,
        userUuid: r.user_uuid,
        targetUuid: r.uuid,
        targetType: 'media',
        sourceUuid: r.uuid,
      })),
    );
    return quiet(async (trx) => {
      await this.#rows.insert(trx, 'media', rows);
      await this.#rows.insert(trx, 'karma', karma);
    });
  }

  /** Registers a tag the batch needs; returns its `type:key`, resolved to a uuid by the batch's first step. */
  #needTag(state: BulkBatchState, type: TagType, name: FoundName): string {
    let names = state.names.get(type);
    if (!names) {
      names = new Map();
      state.names.set(type, names);
    }
    if (!names.has(name.key)) names.set(name.key, name);
    return `${type}:${name.key}`;
  }

  /** Inserts associations with their tags' uuids and counts them for the tags' totals. */
  async #insertAssociations(trx: Db, state: BulkBatchState, pending: PendingAssociation[]): Promise<void> {
    const rows: Insertable<TagAssociationTable>[] = [];
    const counts = new Map<string, number>();
    for (const p of pending) {
      const tagUuid = state.tags.get(p.tag);
      if (!tagUuid) throw new Error(`tag ${p.tag} was not created`);
      rows.push({ ...p.row, tag_uuid: tagUuid });
      counts.set(tagUuid, (counts.get(tagUuid) ?? 0) + 1);
    }
    await this.#rows.insert(trx, 'tag_associations', rows);
    addDeltas(state.tagCounts, counts);
  }

  /** What the tag subscriber does on postCreated/commentCreated, for a whole batch: one association per tag. */
  #extractTags(
    state: BulkBatchState,
    kind: 'post' | 'comment',
    rows: { uuid: string; user_uuid: string; body: string; language: string }[],
  ): PendingAssociation[] {
    const now = nowIso();
    const associations: PendingAssociation[] = [];
    for (const r of rows) {
      const tags = new Set([
        ...extractHashtags(r.body).map((h) => this.#needTag(state, 'hashtag', h)),
        ...extractMentions(r.body).flatMap((name) => {
          const username = this.#usernames.get(name.toLowerCase());
          return username
            ? [this.#needTag(state, 'mention', { name: username, key: normalizeTagName(username) })]
            : [];
        }),
      ]);
      for (const tag of tags) {
        associations.push({
          tag,
          row: {
            uuid: uuidv7(),
            user_uuid: r.user_uuid,
            target_uuid: r.uuid,
            target_type: kind,
            language: r.language,
            created_at: now,
            updated_at: now,
          },
        });
      }
    }
    return associations;
  }

  /**
   * What grantKarma does for each grant, in staging order: the rule's points, 0 past the daily cap. Returns the
   * records; the users' deltas go to the batch.
   */
  #grant(state: BulkBatchState, grants: Grant[]): Insertable<KarmaTable>[] {
    if (grants.length === 0) return [];
    const rules = karmaRules(this.#ctx);
    const now = nowIso();
    const records: Insertable<KarmaTable>[] = [];
    for (const g of grants) {
      const rule = rules[g.rule];
      const key = `${g.userUuid}:${g.rule}`;
      const today = this.#today.get(key) ?? 0;
      this.#today.set(key, today + 1);
      const record = addRecord(g, pointsUnderCap(rule, today), now);
      records.push(record);
      state.karma.set(g.userUuid, (state.karma.get(g.userUuid) ?? 0) + record.points);
    }
    return records;
  }
}

function addDeltas(into: Map<string, number>, deltas: Map<string, number>): void {
  for (const [key, d] of deltas) into.set(key, (into.get(key) ?? 0) + d);
}
