// A deterministic synthetic world. The generator decides every row from the seed alone; a writer (writers.ts) stores
// each batch in one transaction, either through the API's repositories and domain events or set-based (bulk).
import type { Context } from '../../context.ts';
import { uuidv7 } from '../../db/time.ts';
import { hashPassword } from '../../modules/auth/password.ts';
import { pairKey } from '../../modules/connection/connection.repository.ts';
import { EMOTIONS } from '../../modules/tag/normalize.ts';
import type { UserTable } from '../../modules/user/user.table.ts';
import { Random, Zipf } from './random.ts';
import { HASHTAGS, SEED_LANGUAGES, vocabulary } from './vocabulary.ts';
import {
  BulkWriter,
  EventWriter,
  type SeedConnection,
  type SeedReaction,
  type WorldBatch,
  type WorldWriter,
} from './writers.ts';

/** The password of every seeded user, bench_user included. */
export const SEED_PASSWORD = 'password123';
/** The fixed user benchmarks log in as. */
export const BENCH_USERNAME = 'bench_user';

/** What to generate; every count is derived from these and the seed alone. */
export interface WorldOptions {
  users: number;
  posts: number;
  seed: number;
  /** Mean comments per post (only public posts get them). */
  commentsPerPost: number;
  /** Mean emotion reactions per post. */
  reactionsPerPost: number;
  /** Mean confirmed connections each user starts (degree follows a power law). */
  friendsPerUser: number;
  /** Mean messages sent per user. */
  messagesPerUser: number;
  /** Media records per user. */
  mediaPerUser: number;
  /** Users per network. */
  usersPerNetwork: number;
  /** Items written per transaction. */
  batch: number;
  /** Words in each language's vocabulary (head words first, generated tail after). */
  vocabularySize: number;
  /** Many rows per statement with set-based karma and tags (BulkWriter) instead of the event path. */
  bulk: boolean;
  /**
   * Event path only: leave the search index as the API's triggers wrote it, in write order, instead of rebuilding it
   * in creation order (test/seed/world.test.ts compares the two).
   */
  indexAsWritten?: boolean;
}

/** Defaults for everything but users, posts and seed. */
export const WORLD_DEFAULTS: Omit<WorldOptions, 'users' | 'posts' | 'seed' | 'bulk'> = {
  commentsPerPost: 0.3,
  reactionsPerPost: 0.5,
  friendsPerUser: 2,
  messagesPerUser: 0.5,
  mediaPerUser: 0.05,
  usersPerNetwork: 200,
  // Rows of each kind per bulk statement set (or per transaction on the event path): 12% less time than 1,000 on the
  // bulk path (docs/decisions.md, thirty-first session).
  batch: 5000,
  vocabularySize: 20_000,
};

/** The words of a post's text, at least and at most (each drawn from its language's Zipf vocabulary). */
export const POST_WORDS = { min: 10, max: 30 } as const;

/** Rows written per kind. */
export interface WorldCounts {
  users: number;
  connections: number;
  networks: number;
  posts: number;
  comments: number;
  reactions: number;
  media: number;
  messages: number;
}

/** Called after each batch with the phase, the items done in it and the phase total. */
export type ProgressFn = (phase: string, done: number, total: number) => void;

const FIRST =
  'anna ben clara david emma felix greta hugo ida jonas karl lena marie noah olga paul rosa sami tara uwe vera will yara zoe luca mia leon nora theo julia'.split(
    ' ',
  );
const LAST =
  'smith muller martin bernard schmidt dubois weber meyer moreau laurent fischer wagner petit becker roux fournier koch richter klein wolf'.split(
    ' ',
  );

interface SeedUser {
  uuid: string;
  username: string;
  language: string;
}

/** A seeded world generator; `run` writes it and returns the counts. */
export class World {
  readonly #ctx: Context;
  readonly #o: WorldOptions;
  readonly #random: Random;
  readonly #vocab = new Map<string, { words: string[]; zipf: Zipf }>();
  readonly #users: SeedUser[] = [];
  readonly #friends: string[][] = [];
  readonly #networks: string[] = [];
  readonly #usernames = new Map<string, string>();
  #writer: WorldWriter;
  #onProgress: ProgressFn | undefined;
  /** Start of the seeded time span; items get increasing times ending about now. */
  readonly #t0: number;
  readonly #counts: WorldCounts = {
    users: 0,
    connections: 0,
    networks: 0,
    posts: 0,
    comments: 0,
    reactions: 0,
    media: 0,
    messages: 0,
  };

  constructor(ctx: Context, options: WorldOptions) {
    this.#ctx = ctx;
    this.#o = options;
    this.#random = new Random(options.seed);
    this.#t0 = Date.now() - 365 * 86_400_000;
    this.#writer = options.bulk
      ? new BulkWriter(ctx, this.#usernames)
      : new EventWriter(ctx, { rebuild: options.indexAsWritten !== true });
    for (const { code } of SEED_LANGUAGES) {
      const words = vocabulary(code, options.vocabularySize, options.seed);
      this.#vocab.set(code, { words, zipf: new Zipf(words.length) });
    }
  }

  /** Writes users, networks, friendships, posts with comments and reactions, media and messages. */
  async run(progress: ProgressFn = () => {}): Promise<WorldCounts> {
    this.#onProgress = progress;
    const passwordHash = await hashPassword(SEED_PASSWORD);
    await this.#writer.begin(this.#ctx.db);
    let failed = true;
    try {
      await this.#seedUsers(passwordHash);
      await this.#seedNetworks();
      await this.#seedConnections();
      await this.#seedPosts();
      await this.#seedMedia();
      await this.#seedMessages();
      failed = false;
    } finally {
      // Also after a failed batch: the schema is whole again whatever was written.
      await this.#writer.finish(this.#ctx.db, progress, failed);
    }
    return { ...this.#counts };
  }

  #language(): string {
    let u = this.#random.next();
    for (const l of SEED_LANGUAGES) {
      u -= l.weight;
      if (u < 0) return l.code;
    }
    return 'en';
  }

  #words(language: string, min: number, max: number): string[] {
    const v = this.#vocab.get(language) ?? this.#vocab.get('en');
    if (!v) return [];
    const n = this.#random.int(min, max);
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(v.words[v.zipf.sample(this.#random)] as string);
    return out;
  }

  #visibility(): 'public' | 'friends' | 'private' {
    const u = this.#random.next();
    return u < 0.8 ? 'public' : u < 0.95 ? 'friends' : 'private';
  }

  /** A time (ISO) at fraction `f` of the seeded year. */
  #time(f: number): string {
    return new Date(this.#t0 + Math.floor(f * 365 * 86_400_000)).toISOString();
  }

  /**
   * Stages batches of the configured size in order (`stage` generates the rows: everything random happens here, so
   * the world does not depend on how the batches are written) and writes each in one transaction, up to the
   * writer's concurrency at once. After a failure no new batch starts; the running ones end first.
   */
  async #batches(phase: string, total: number, stage: (batch: WorldBatch, from: number, to: number) => void) {
    this.#onProgress?.(phase, 0, total);
    const running = new Set<Promise<void>>();
    let done = 0;
    let failure: { error: unknown } | undefined;
    try {
      for (let from = 0; from < total && !failure; from += this.#o.batch) {
        const to = Math.min(total, from + this.#o.batch);
        const batch = this.#writer.batch();
        stage(batch, from, to);
        const task = batch
          .prepare(this.#ctx.db)
          .then(() => this.#ctx.db.transaction().execute((trx) => batch.write(trx)))
          .then(
            (added) => {
              batch.committed();
              this.#counts.reactions += added;
              done += to - from;
              this.#onProgress?.(phase, done, total);
            },
            (error: unknown) => {
              failure ??= { error };
            },
          )
          .finally(() => running.delete(task));
        running.add(task);
        if (running.size >= this.#writer.concurrency) await Promise.race(running);
      }
    } finally {
      // Also when staging threw: no transaction may outlive this phase.
      await Promise.all(running);
    }
    if (failure) throw failure.error;
  }

  async #seedUsers(passwordHash: string): Promise<void> {
    const total = this.#o.users + 1;
    const networkCount = Math.max(1, Math.floor(this.#o.users / this.#o.usersPerNetwork));
    for (let i = 0; i < networkCount; i++) this.#networks.push(uuidv7());
    await this.#batches('users', total, (batch, from, to) => {
      const rows: UserTable[] = [];
      for (let i = from; i < to; i++) {
        const language = i === 0 ? 'en' : this.#language();
        const first = this.#random.pick(FIRST);
        const last = this.#random.pick(LAST);
        const username = i === 0 ? BENCH_USERNAME : `${first}_${last}_${i}`;
        const bio = this.#words(language, 5, 12).join(' ');
        // A third of the users are members of a network (joining only sets users.network_uuid).
        const network = this.#random.chance(0.3) ? this.#random.pick(this.#networks) : null;
        const time = this.#time((0.1 * i) / total);
        const uuid = uuidv7();
        rows.push({
          uuid,
          username,
          username_key: username.toLowerCase(),
          email: `${username}@example.test`,
          email_key: `${username}@example.test`.toLowerCase(),
          password_hash: passwordHash,
          display_name: i === 0 ? 'Bench User' : `${cap(first)} ${cap(last)}`,
          bio,
          language,
          network_uuid: network,
          role: 'user',
          karma: 0,
          created_at: time,
          updated_at: time,
        });
        this.#users.push({ uuid, username, language });
        this.#usernames.set(username.toLowerCase(), username);
        this.#friends.push([]);
      }
      batch.users(rows);
      this.#counts.users += rows.length;
    });
  }

  async #seedNetworks(): Promise<void> {
    const total = this.#networks.length;
    await this.#batches('networks', total, (batch, from, to) => {
      const rows = [];
      for (let i = from; i < to; i++) {
        const owner = this.#random.pick(this.#users);
        const time = this.#time(0.1 + (0.01 * i) / total);
        rows.push({
          uuid: this.#networks[i] as string,
          name: `${cap(this.#words(owner.language, 1, 1)[0] ?? 'net')} ${cap(this.#random.pick(HASHTAGS))} ${i}`,
          description: this.#words(owner.language, 6, 14).join(' '),
          payment_id: null,
          user_uuid: owner.uuid,
          created_at: time,
          updated_at: time,
        });
      }
      batch.networks(rows);
      this.#counts.networks += rows.length;
    });
  }

  /** Confirmed connections: one side by preferential attachment (Zipf over users), so degrees follow a power law. */
  async #seedConnections(): Promise<void> {
    const n = this.#users.length;
    if (n < 2) return;
    const total = Math.floor(n * this.#o.friendsPerUser);
    const popular = new Zipf(n, 0.9);
    const pairs = new Set<string>();
    await this.#batches('friendships', total, (batch, from, to) => {
      const rows: SeedConnection[] = [];
      for (let i = from; i < to; i++) {
        const ai = popular.sample(this.#random);
        const bi = this.#random.int(0, n - 1);
        const a = this.#users[ai] as SeedUser;
        const b = this.#users[bi] as SeedUser;
        if (a === b) continue;
        const key = pairKey(a.uuid, b.uuid);
        if (pairs.has(key)) continue;
        pairs.add(key);
        rows.push({
          uuid: uuidv7(),
          requester: b.uuid,
          addressee: a.uuid,
          pairKey: key,
          time: this.#time(0.11 + (0.04 * i) / total),
        });
        this.#friends[ai]?.push(b.uuid);
        this.#friends[bi]?.push(a.uuid);
      }
      batch.connections(rows);
      this.#counts.connections += rows.length;
    });
  }

  /**
   * Posts, and on the public ones their comments and emotion reactions. Each post's comments and reactions are drawn
   * right after the post, so the world does not depend on --batch.
   */
  async #seedPosts(): Promise<void> {
    const n = this.#users.length;
    const authors = new Zipf(n, 0.7);
    const total = this.#o.posts;
    // Only public posts (80 %) get comments and reactions; the means are per post of any visibility.
    const commentsPerPublic = this.#o.commentsPerPost / 0.8;
    const reactionsPerPublic = this.#o.reactionsPerPost / 0.8;
    await this.#batches('posts', total, (batch, from, to) => {
      const posts = [];
      const comments = [];
      const reactions: SeedReaction[] = [];
      for (let i = from; i < to; i++) {
        const author = this.#users[authors.sample(this.#random)] as SeedUser;
        const language = this.#random.chance(0.7) ? author.language : this.#language();
        const words = this.#words(language, POST_WORDS.min, POST_WORDS.max);
        if (this.#random.chance(0.3)) {
          const k = this.#random.int(1, 2);
          for (let j = 0; j < k; j++) {
            words.splice(this.#random.int(0, words.length), 0, `#${this.#random.pick(HASHTAGS)}`);
          }
        }
        if (this.#random.chance(0.1)) {
          const mentioned = this.#users[this.#random.int(0, n - 1)] as SeedUser;
          words.splice(this.#random.int(0, words.length), 0, `@${mentioned.username}`);
        }
        const visibility = this.#visibility();
        const network = this.#random.chance(0.1) ? this.#random.pick(this.#networks) : null;
        const time = this.#time(0.15 + (0.85 * i) / total);
        const uuid = uuidv7();
        posts.push({
          uuid,
          user_uuid: author.uuid,
          body: words.join(' '),
          visibility,
          language,
          network_uuid: network,
          created_at: time,
          updated_at: time,
        });
        if (visibility !== 'public') continue;
        for (let c = poisson(this.#random, commentsPerPublic); c > 0; c--) {
          comments.push({
            uuid: uuidv7(),
            post_uuid: uuid,
            user_uuid: (this.#users[this.#random.int(0, n - 1)] as SeedUser).uuid,
            body: this.#words(language, 4, 15).join(' '),
            language,
            created_at: time,
            updated_at: time,
          });
        }
        for (let r = poisson(this.#random, reactionsPerPublic); r > 0; r--) {
          reactions.push({
            userUuid: (this.#users[this.#random.int(0, n - 1)] as SeedUser).uuid,
            emotion: this.#random.pick(EMOTIONS),
            postUuid: uuid,
            postAuthor: author.uuid,
            language,
          });
        }
      }
      batch.posts(posts);
      this.#counts.posts += posts.length;
      batch.comments(comments);
      this.#counts.comments += comments.length;
      batch.reactions(reactions);
    });
  }

  /** Media records only: no file is written, so GET /media/{uuid}/file answers 404 for seeded media. */
  async #seedMedia(): Promise<void> {
    const total = Math.floor(this.#users.length * this.#o.mediaPerUser);
    await this.#batches('media', total, (batch, from, to) => {
      const rows = [];
      for (let i = from; i < to; i++) {
        const owner = this.#random.pick(this.#users);
        const visibility = this.#visibility();
        const time = this.#time(0.15 + (0.85 * i) / Math.max(1, total));
        const uuid = uuidv7();
        rows.push({
          uuid,
          user_uuid: owner.uuid,
          title: this.#words(owner.language, 2, 5).join(' '),
          description: this.#words(owner.language, 5, 15).join(' '),
          content_type: 'image/png',
          size: 68,
          visibility,
          language: owner.language,
          storage_key: `seed/${uuid}.png`,
          created_at: time,
          updated_at: time,
        });
      }
      batch.media(rows);
      this.#counts.media += rows.length;
    });
  }

  /** Direct messages, mostly between friends. */
  async #seedMessages(): Promise<void> {
    const n = this.#users.length;
    if (n < 2) return;
    const total = Math.floor(n * this.#o.messagesPerUser);
    await this.#batches('messages', total, (batch, from, to) => {
      const rows = [];
      for (let i = from; i < to; i++) {
        const index = this.#random.int(0, n - 1);
        const sender = this.#users[index] as SeedUser;
        const friends = this.#friends[index] ?? [];
        let recipient =
          friends.length > 0 && this.#random.chance(0.8)
            ? this.#random.pick(friends)
            : (this.#users[this.#random.int(0, n - 1)] as SeedUser).uuid;
        if (recipient === sender.uuid) recipient = (this.#users[(index + 1) % n] as SeedUser).uuid;
        rows.push({
          uuid: uuidv7(),
          user_uuid: sender.uuid,
          recipient_uuid: recipient,
          body: this.#words(sender.language, 3, 20).join(' '),
          language: sender.language,
          created_at: this.#time(0.15 + (0.85 * i) / total),
        });
      }
      batch.messages(rows);
      this.#counts.messages += rows.length;
    });
  }
}

function cap(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/** A Poisson-distributed count with the given mean (normal approximation above 50). */
function poisson(random: Random, mean: number): number {
  if (mean <= 0) return 0;
  if (mean > 50) {
    const z = Math.sqrt(-2 * Math.log(1 - random.next())) * Math.cos(2 * Math.PI * random.next());
    return Math.max(0, Math.round(mean + Math.sqrt(mean) * z));
  }
  const limit = Math.exp(-mean);
  let k = 0;
  let p = random.next();
  while (p > limit) {
    k++;
    p *= random.next();
  }
  return k;
}
