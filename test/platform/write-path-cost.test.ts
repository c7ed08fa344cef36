// The write path must not get slower with what a busy author wrote before. The karma daily-cap check ran once per
// post and, on PostgreSQL, read every karma record of the author's day before its LIMIT applied (a bitmap scan and a
// sort for the DISTINCT): thousands of rows for an author past the cap. Migration 0008 gave it a partial index of
// the records that earned points; this checks what the engine actually reads, with the real query, for an author
// with a day of 0-point records and a long history of records that earned points under another rule.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import {
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  PostgresQueryCompiler,
  type QueryId,
  type QueryResult,
  type RootOperationNode,
  SqliteQueryCompiler,
  sql,
  type UnknownRow,
} from 'kysely';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import type { Context } from '../../src/context.ts';
import { connectDatabase } from '../../src/db/connect.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { saveClient } from '../../src/modules/auth/auth.service.ts';
import { nettingAddRecordsCount } from '../../src/modules/karma/karma.repository.ts';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { wordStatsTiming } from '../../src/modules/search/search-word-stats.service.ts';
import {
  body,
  countPgRoundTrips,
  injectWithToken,
  insertInBatches,
  insertTestUser,
  type PgRoundTrips,
  type TestUser,
  testDialects,
} from '../helper.ts';
import { type LoggedApp, startLoggedApp, UNLIMITED } from '../reliability/support.ts';

const ZERO_POINT_RECORDS = 3000;
const CAP = 50;

/** Rows each plan node of a PostgreSQL EXPLAIN ANALYZE produced, with the index it read. */
function scans(plan: Record<string, unknown>, out: { index: string; rows: number }[] = []) {
  if (typeof plan['Node Type'] === 'string' && /Scan/.test(plan['Node Type'] as string)) {
    out.push({
      index: String(plan['Index Name'] ?? plan['Relation Name'] ?? plan['Node Type']),
      rows: Number(plan['Actual Rows']) * Number(plan['Actual Loops'] ?? 1),
    });
  }
  for (const child of (plan.Plans as Record<string, unknown>[] | undefined) ?? []) scans(child, out);
  return out;
}

for (const dialect of testDialects()) {
  describe(`karma daily-cap check past the cap [${dialect.name}]`, () => {
    let t: LoggedApp;
    let author: { uuid: string; token: string };
    let firstPost: string;
    const since = () => {
      const d = new Date();
      d.setUTCHours(0, 0, 0, 0);
      return d.toISOString();
    };

    before(async () => {
      t = await startLoggedApp(dialect, UNLIMITED);
      author = await t.createUser();
      // The cap's worth of posts through the API, then a day's worth of 0-point records behind them.
      for (let i = 0; i < CAP; i++) {
        const res = await t.inject({
          method: 'POST',
          url: '/posts',
          token: author.token,
          payload: { body: `p${i}` },
        });
        assert.equal(res.statusCode, 201, res.body);
        if (i === 0) firstPost = body(res).data.uuid;
      }
      // Also a history that earned points under another rule, so no other index of the author's records is short.
      const now = nowIso();
      const yesterday = new Date(Date.now() - 86_400_000).toISOString();
      const record = (event: string, points: number, at: string) => ({
        uuid: uuidv7(),
        user_uuid: author.uuid,
        event,
        rule: event,
        target_uuid: uuidv7(),
        target_type: 'post',
        karma_type: 'add',
        points,
        source_uuid: uuidv7(),
        created_at: at,
        updated_at: at,
      });
      const rows = [
        ...Array.from({ length: ZERO_POINT_RECORDS }, () => record('postCreated', 0, now)),
        ...Array.from({ length: ZERO_POINT_RECORDS }, () => record('emotionReceived', 1, yesterday)),
      ];
      await insertInBatches(t.ctx.db, 'karma', rows);
      await sql.raw(dialect.name === 'postgres' ? 'ANALYZE karma' : 'ANALYZE').execute(t.ctx.db);
    });
    after(async () => t?.close());

    /** Posts `text` as the author; the points its karma record earned. */
    const pointsOfPost = async (text: string) => {
      const res = await t.inject({
        method: 'POST',
        url: '/posts',
        token: author.token,
        payload: { body: text },
      });
      assert.equal(res.statusCode, 201, res.body);
      const record = await t.ctx.db
        .selectFrom('karma')
        .select('points')
        .where('source_uuid', '=', body(res).data.uuid)
        .executeTakeFirstOrThrow();
      return Number(record.points);
    };

    it('still counts the cap: the next post earns 0 points', async () => {
      assert.equal(await pointsOfPost('one more'), 0);
      const n = await nettingAddRecordsCount(
        t.ctx.db,
        author.uuid,
        'postCreated',
        since(),
        CAP,
      ).executeTakeFirstOrThrow();
      assert.equal(Number(n.n), CAP);
    });

    it('reads about the cap, not the whole day, on PostgreSQL', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const compiled = nettingAddRecordsCount(t.ctx.db, author.uuid, 'postCreated', since(), CAP).compile();
      const explained = await t.ctx.db.executeQuery<{ 'QUERY PLAN': [{ Plan: Record<string, unknown> }] }>({
        ...compiled,
        sql: `EXPLAIN (ANALYZE, FORMAT JSON) ${compiled.sql}`,
      });
      const plan = explained.rows[0]?.['QUERY PLAN'][0]?.Plan;
      assert.ok(plan, 'a plan');
      const outer = scans(plan).filter((s) => s.index !== 'karma_source_user');
      const read = outer.reduce((sum, s) => sum + s.rows, 0);
      assert.ok(
        read <= CAP * 2,
        `the check read ${read} rows of a day of ${CAP + ZERO_POINT_RECORDS + 1}: ${JSON.stringify(outer)}`,
      );
      // No source was taken back today: no counted record's source is probed for what it still nets.
      const probes = scans(plan).filter((s) => s.index === 'karma_source_user');
      assert.equal(
        probes.reduce((sum, s) => sum + s.rows, 0),
        0,
        JSON.stringify(probes),
      );
    });

    it('reads only the partial indexes of earning and subtract records on SQLite', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      const compiled = nettingAddRecordsCount(t.ctx.db, author.uuid, 'postCreated', since(), CAP).compile();
      const plan = await t.ctx.db.executeQuery<{ detail: string }>({
        ...compiled,
        sql: `EXPLAIN QUERY PLAN ${compiled.sql}`,
      });
      const steps = plan.rows.map((r) => r.detail).join('\n');
      assert.match(steps, /COVERING INDEX karma_netting_adds/);
      assert.match(steps, /INDEX karma_subtracts/);
      assert.doesNotMatch(steps, /karma_user_event_created/);
    });

    it('holds the cap in the statement, not as a bound value, and refuses a cap that is not a count', () => {
      // SQLite ran the count with a bound LIMIT in about twice the time (docs/decisions.md, twenty-first session).
      const compiled = nettingAddRecordsCount(t.ctx.db, author.uuid, 'postCreated', since(), CAP).compile();
      assert.match(compiled.sql, new RegExp(`limit ${CAP}\\)`));
      assert.ok(!compiled.parameters.includes(CAP), JSON.stringify(compiled.parameters));
      for (const bad of [-1, 1.5, Number.NaN]) {
        assert.throws(
          () => nettingAddRecordsCount(t.ctx.db, author.uuid, 'postCreated', since(), bad),
          /daily cap/,
        );
      }
    });

    it('a post deleted today frees its place: the next post earns points again, the one after does not', async () => {
      const deleted = await t.inject({
        method: 'POST',
        url: `/posts/${firstPost}/delete`,
        token: author.token,
      });
      assert.equal(deleted.statusCode, 200, deleted.body);
      assert.equal(await pointsOfPost('after a deletion'), 2);
      assert.equal(await pointsOfPost('after a deletion'), 0);
    });
  });
}

/**
 * Records the SQL of every statement a Kysely instance runs (BEGIN and COMMIT go through the driver, not here).
 * Queries embedded in others pass through transformQuery too; only an executed one reaches transformResult.
 */
class StatementLog implements KyselyPlugin {
  readonly statements: string[] = [];
  readonly #compiled = new WeakMap<QueryId, string>();
  readonly #compiler: { compileQuery: (node: RootOperationNode, id: QueryId) => { sql: string } };

  constructor(dialect: 'sqlite' | 'postgres') {
    this.#compiler = dialect === 'postgres' ? new PostgresQueryCompiler() : new SqliteQueryCompiler();
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.#compiled.set(
      args.queryId,
      this.#compiler.compileQuery(args.node, args.queryId).sql.replace(/\s+/g, ' '),
    );
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.statements.push(this.#compiled.get(args.queryId) ?? '(unknown)');
    return args.result;
  }
}

// PostgreSQL: an insert of associations that stages their tag counts in its own statement (insertAssociationsCounted).
const COUNTED_INSERT = /^with "added" as \(insert into "tag_associations" .*set_config\(/;
// PostgreSQL's association of a new text's stored tags: lookup, insert and count staging in one statement.
const STORED_TAGS_ASSOCIATED = /^with "found" as .* "added" as \(insert into tag_associations .*set_config\(/;

for (const dialect of testDialects()) {
  describe(`statements per request (posts, lists, searches) [${dialect.name}]`, () => {
    let app: FastifyInstance;
    let ctx: Context;
    let log: StatementLog;
    let close: () => Promise<void>;
    let author: TestUser;
    let mentioned: TestUser;
    let trips: PgRoundTrips;

    before(async () => {
      // Round trips of every client the pool connects from here on.
      trips = countPgRoundTrips();
      const { url, drop } = await dialect.create();
      const config = loadConfig({}, { DATABASE_URL: url, LOG_LEVEL: 'silent', ...UNLIMITED });
      const handle = connectDatabase(url, { synchronous: 'NORMAL', poolSize: 5, pgGroupCommit: true });
      await migrateToLatest(handle.db, handle.dialect);
      log = new StatementLog(dialect.name);
      const db = handle.db.withPlugin(log);
      ({ app, ctx } = await buildApp(config, {
        handle: { ...handle, db, readDb: db },
        skipMigrations: true,
        logger: false,
      }));
      await app.ready();
      await saveClient(ctx.db, {
        id: 'stmt-client',
        secret: 'stmt-client-secret',
        name: 'c',
        firstParty: true,
      });
      author = await insertTestUser(ctx, 'stmt-client', `author_${dialect.name}`);
      mentioned = await insertTestUser(ctx, 'stmt-client', `friend_${dialect.name}`);
      close = async () => {
        await app.close();
        await handle.db.destroy();
        await drop();
      };
    });
    after(async () => {
      trips?.restore();
      await close?.();
    });

    /** The stored associations_count of a tag. */
    const storedCount = async (tagType: string, nameKey: string) =>
      Number(
        (
          await ctx.db
            .selectFrom('tags')
            .select('associations_count')
            .where('tag_type', '=', tagType)
            .where('name_key', '=', nameKey)
            .executeTakeFirstOrThrow()
        ).associations_count,
      );
    /** POST /posts as the author. */
    const postAsAuthor = (payload: Record<string, unknown>) =>
      injectWithToken(app, { method: 'POST', url: '/posts', token: author.token, payload });
    /** Posts `text` and returns the statements from the post's insert to the end of the request. */
    const post = async (text: string) => {
      log.statements.length = 0;
      const res = await injectWithToken(app, {
        method: 'POST',
        url: '/posts',
        token: author.token,
        payload: { body: text, language: 'en' },
      });
      assert.equal(res.statusCode, 201, res.body);
      const start = log.statements.findIndex((s) => /^insert into "posts"/.test(s));
      assert.ok(start >= 0, 'the post insert ran through the logged instance');
      return log.statements.slice(start);
    };
    const text = () => `coffee #Morning #music @${mentioned.username}`;
    /** Searches `query` uncached as the author, from a cleared log, and checks the bodies found. */
    const searchAsAuthor = async (query: string, bodies: string[]) => {
      log.statements.length = 0;
      const res = await injectWithToken(app, {
        method: 'GET',
        url: `/search?query=${query}`,
        token: author.token,
        headers: { 'cache-control': 'no-cache' },
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        body(res).data.map((i: { body?: string }) => i.body),
        bodies,
      );
    };

    it('past the daily cap: five statements (three on PostgreSQL), no lock on the author, the tag counts last and in one', async () => {
      // The tags exist after the first post; the cap (50) is reached after 50.
      for (let i = 0; i < CAP; i++) await post(text());
      const statements = await post(text());
      assert.equal(statements.length, dialect.name === 'postgres' ? 3 : 5, statements.join('\n'));
      // The grant decides its 0 points in its own insert: no statement reads the karma records before it.
      const karma = statements.filter((s) => /"karma"|\bkarma\b/.test(s));
      assert.equal(karma.length, 1, statements.join('\n'));
      assert.match(karma[0] as string, /^insert into "karma" .* select /);
      assert.ok(!statements.some((s) => /from "users" .*for no key update/.test(s)), statements.join('\n'));
      // PostgreSQL stages the counts for its commit, which adds them (migration 0016): no tag row is locked before.
      // The associations' insert stages them itself.
      const counting = dialect.name === 'postgres' ? STORED_TAGS_ASSOCIATED : /update "?tags"? /;
      assert.match(statements.at(-1) as string, counting);
      assert.equal(statements.filter((s) => counting.test(s)).length, 1);
      if (dialect.name === 'postgres') assert.ok(!statements.some((s) => /update "?tags"? /.test(s)));
      // Nothing reads the new post back, and the hashtags, the mentioned user and their tag come in one statement,
      // on PostgreSQL the one that associates them.
      assert.ok(!statements.some((s) => /from "posts"/.test(s)), statements.join('\n'));
      const lookups = statements.filter((s) => /from "(users|tags)"/.test(s));
      assert.equal(lookups.length, 1, statements.join('\n'));
      assert.match(lookups[0] as string, /from "users".* union all .*from "tags"/);
    });

    it('a new post associates its stored tags at once and creates only the missing ones, on PostgreSQL in the same round trip', async () => {
      // #music and the mention tag of `mentioned` are stored; the fresh hashtag and the newcomer's tag are not.
      await post(`tea #music @${mentioned.username}`);
      const newcomer = await insertTestUser(ctx, 'stmt-client', `newcomer_${dialect.name}`);
      const fresh = `fresh${dialect.name}${Date.now()}`;
      const mentionKey = mentioned.username.toLowerCase();
      const before = await storedCount('hashtag', 'music');
      const mentionsBefore = await storedCount('mention', mentionKey);
      const statements = await post(
        `tea #music #${fresh} @${mentioned.username} @${newcomer.username} @nobody_here_at_all`,
      );
      const stored = await ctx.db
        .selectFrom('tag_associations as ta')
        .innerJoin('tags as t', 't.uuid', 'ta.tag_uuid')
        .innerJoin('posts as p', 'p.uuid', 'ta.target_uuid')
        .select(['t.tag_type', 't.name_key', 'ta.audience', 'ta.audience_owner', 'ta.language'])
        .where('p.body', 'like', `tea #music #${fresh}%`)
        .execute();
      const byKey = (a: unknown[], b: unknown[]) => (String(a[1]) < String(b[1]) ? -1 : 1);
      assert.deepEqual(
        stored.map((r) => [r.tag_type, r.name_key, r.audience, r.audience_owner, r.language]).sort(byKey),
        [
          ['hashtag', fresh, 'public', author.uuid, 'en'],
          ['mention', mentionKey, 'public', author.uuid, 'en'],
          ['mention', newcomer.username.toLowerCase(), 'public', author.uuid, 'en'],
          ['hashtag', 'music', 'public', author.uuid, 'en'],
        ].sort(byKey),
      );
      assert.equal(await storedCount('hashtag', 'music'), before + 1);
      assert.equal(await storedCount('mention', mentionKey), mentionsBefore + 1);
      assert.equal(await storedCount('hashtag', fresh), 1);
      assert.equal(await storedCount('mention', newcomer.username.toLowerCase()), 1);
      if (dialect.name === 'postgres') {
        // The stored tags associated in the lookup's own statement; after it, the two tags created, read back and
        // associated in one insert of exactly two rows.
        assert.equal(
          statements.filter((s) => STORED_TAGS_ASSOCIATED.test(s)).length,
          1,
          statements.join('\n'),
        );
        const inserts = statements.filter((s) => /insert into "?tag_associations"? /.test(s));
        assert.equal(inserts.length, 2, statements.join('\n'));
        assert.match(inserts[1] as string, /values \([^()]*\), \([^()]*\) on conflict/);
      }
    });

    it('a reaction counts its tag in its own insert on PostgreSQL, and after it on SQLite: no other count', async () => {
      const created = await postAsAuthor({ body: 'react to me', language: 'en' });
      assert.equal(created.statusCode, 201, created.body);
      log.statements.length = 0;
      const res = await injectWithToken(app, {
        method: 'POST',
        url: `/posts/${body(created).data.uuid}/emotions`,
        token: mentioned.token,
        payload: { name: 'love' },
      });
      assert.equal(res.statusCode, 201, res.body);
      const inserts = log.statements.filter((s) => /insert into "tag_associations"/.test(s));
      assert.equal(inserts.length, 1, log.statements.join('\n'));
      const counts = log.statements.filter((s) => /set_config\(|update "?tags"? /.test(s));
      if (dialect.name === 'postgres') {
        assert.match(inserts[0] as string, COUNTED_INSERT);
        assert.deepEqual(counts, inserts, log.statements.join('\n'));
      } else {
        assert.equal(counts.length, 1, log.statements.join('\n'));
        assert.ok(log.statements.indexOf(counts[0] as string) > log.statements.indexOf(inserts[0] as string));
      }
      assert.equal(await storedCount('emotion', 'love'), 1);
    });

    it('reads no token row while only content was written since the last check (the auth version)', async () => {
      // Without tags, so the counts the next test checks stay as they were.
      await post('plain words');
      log.statements.length = 0;
      const res = await postAsAuthor({ body: 'plain words again', language: 'en' });
      assert.equal(res.statusCode, 201, res.body);
      assert.ok(!log.statements.some((s) => /from "tokens"/.test(s)), log.statements.join('\n'));
    });

    it("a post without a language reads its author's language in its insert, not in a statement before", async () => {
      log.statements.length = 0;
      const res = await injectWithToken(app, {
        method: 'POST',
        url: '/posts',
        token: author.token,
        payload: { body: 'x' },
      });
      assert.equal(res.statusCode, 201, res.body);
      const start = log.statements.findIndex((s) => /^insert into "posts"/.test(s));
      assert.ok(start >= 0, log.statements.join('\n'));
      assert.ok(
        !log.statements.slice(0, start).some((s) => /from "users"/.test(s)),
        log.statements.join('\n'),
      );
      assert.match(log.statements[start] as string, /select u\.language from users u/);
    });

    it('a post with its language given sends its insert with the next statement on PostgreSQL: one round trip fewer', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const tripsOf = async (payload: Record<string, unknown>) => {
        trips.reset();
        const res = await postAsAuthor(payload);
        assert.equal(res.statusCode, 201, res.body);
        return {
          trips: trips.count,
          uuid: body(res).data.uuid as string,
          language: body(res).data.language as string,
        };
      };
      // Warmed: the token check and the statements' names are settled before counting.
      await tripsOf({ body: 'warm', language: 'en' });
      await tripsOf({ body: 'warm' });
      const without = await tripsOf({ body: 'no language given' });
      const given = await tripsOf({ body: 'language given', language: 'fr' });
      assert.equal(given.trips, without.trips - 1, `${given.trips} round trips against ${without.trips}`);
      const stored = await ctx.db
        .selectFrom('posts')
        .select(['uuid', 'language'])
        .where('uuid', 'in', [without.uuid, given.uuid])
        .orderBy('uuid')
        .execute();
      assert.deepEqual(stored, [
        { uuid: without.uuid, language: without.language },
        { uuid: given.uuid, language: 'fr' },
      ]);
    });

    it('under the cap a grant worth points locks the author on PostgreSQL only, and counts exactly', async () => {
      const fresh = await insertTestUser(ctx, 'stmt-client', `fresh_${dialect.name}`);
      log.statements.length = 0;
      const res = await injectWithToken(app, {
        method: 'POST',
        url: '/posts',
        token: fresh.token,
        payload: { body: `first #Morning @${mentioned.username}`, language: 'en' },
      });
      assert.equal(res.statusCode, 201, res.body);
      const locks = log.statements.filter((s) => /from "users" where "uuid" = \$1 for no key update/.test(s));
      assert.equal(locks.length, dialect.name === 'postgres' ? 1 : 0, log.statements.join('\n'));
      const user = await ctx.db
        .selectFrom('users')
        .select('karma')
        .where('uuid', '=', fresh.uuid)
        .executeTakeFirst();
      assert.equal(Number(user?.karma), 2);
      assert.equal(await storedCount('hashtag', 'morning'), CAP + 2);
    });

    it('list pages of one filter share their exact count until the next write', async () => {
      const counts = () => log.statements.filter((s) => /^select (\(\(select )?count\(\*\)/.test(s)).length;
      const total = async (url: string) => {
        const res = await injectWithToken(app, { method: 'GET', url, token: author.token });
        assert.equal(res.statusCode, 200, res.body);
        return body(res).count.total as number;
      };
      // PostgreSQL's snapshot, which the cached answers are kept under, is the whole server's: another test file's
      // commit in its own database moves it too. A pair of reads it moved between is read again.
      const snapshot = async () =>
        dialect.name === 'postgres'
          ? (await sql<{ v: string }>`select pg_current_snapshot()::text as v`.execute(ctx.db)).rows[0]?.v
          : '';
      for (const base of [
        '/tags?filterby[tag_type]=hashtag',
        '/tag-associations?filterby[target_type]=post',
      ]) {
        let first = 0;
        for (let attempt = 0; ; attempt++) {
          await post(`a fresh write before the pair #Pair${attempt}`);
          const before = await snapshot();
          log.statements.length = 0;
          first = await total(`${base}&sortby[created_at]=desc&limit=2`);
          assert.equal(counts(), 1, log.statements.join('\n'));
          assert.equal(await total(`${base}&sortby[uuid]=asc&limit=3&offset=1`), first);
          if ((await snapshot()) !== before && attempt < 10) continue;
          assert.equal(counts(), 1, `${base}: the second sort and page reuse the count`);
          break;
        }
        await post(`another #Fresh${base.length} @${mentioned.username}`);
        log.statements.length = 0;
        const after = await total(`${base}&sortby[uuid]=asc&limit=3&offset=1`);
        assert.ok(after > first, `${base}: ${after} after a write, ${first} before`);
        assert.equal(counts(), 1, 'counted anew after the write');
      }
    });

    it('a signed-in search reads the id ranges of its kinds in one statement', async () => {
      await post('a searchable zymurgy post');
      await searchAsAuthor('zymurgy', ['a searchable zymurgy post']);
      // The ranges of the kinds but messages and of every kind searched: one round trip, not one each.
      const ranges = log.statements.filter((s) => /\(select min\(id\) from search_docs/.test(s));
      assert.equal(ranges.length, 1, log.statements.join('\n'));
      assert.match(ranges[0] as string, /as "?first1"?/);
    });

    it('PostgreSQL: a word no sampled range holds is read in one walk, found however old', async () => {
      // Shrunk: the newest 20 documents decide commonness, the recent window is 20, no ranges spread below. The
      // statistics are left out, rare and dense words alike, as an autovacuum's ANALYZE of this database would bring
      // them in (they are tested below and in word-stats.test.ts).
      const standard = { ...searchTuning };
      Object.assign(searchTuning, {
        rankedCandidates: 10,
        recentDocs: 20,
        spreadRanges: 0,
        statsRareMatches: 0,
        statsDenseShare: 0,
      });
      try {
        await post('an old quasar post');
        for (let i = 0; i < 25; i++) await post(`newer filler ${i}`);
        await searchAsAuthor('quasar', ['an old quasar post']);
        if (dialect.name !== 'postgres') return;
        // The count of the newest documents, then the caller's messages and the other kinds, each walked once: not a
        // recent window, a density sample below it and an older walk besides (docs/search.md, "Rare words everywhere").
        const matching = log.statements.filter((s) => /\btsv\b/.test(s));
        assert.equal(matching.length, 3, matching.join('\n\n'));
      } finally {
        Object.assign(searchTuning, standard);
      }
    });

    it('PostgreSQL: a word one spread range holds once, and so few matches in all, is read in one walk too', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      // 50 ranked candidates (10 for a common word: the newest 100 ids are counted), a recent window of 20, and one
      // range of 120 ids spread over the older ids, placed to hold the old match: 1 match in 220 ids counted, scaled
      // to every id, is far under 50 (rareEverywhereEstimate), and 1 in 120 is not dense.
      const standard = { ...searchTuning };
      const fillers = async (n: number) => {
        const now = nowIso();
        const rows = Array.from({ length: n }, (_, i) => ({
          uuid: uuidv7(),
          user_uuid: author.uuid,
          body: `filler number ${i}`,
          visibility: 'public',
          language: 'en',
          created_at: now,
          updated_at: now,
        }));
        await ctx.db.insertInto('posts').values(rows).execute();
      };
      const idOf = async (what: 'min(id)' | 'max(id)', where = sql`kind <> 'messages'`) =>
        Number(
          (
            await sql<{ id: number }>`select ${sql.raw(what)} as id from search_docs where ${where}`.execute(
              ctx.db,
            )
          ).rows[0]?.id,
        );
      try {
        await fillers(300);
        await post('an old xyloid post');
        const match = await idOf('max(id)', sql`body = 'an old xyloid post'`);
        const first = await idOf('min(id)');
        // The one spread range ends halfway through the ids below the newest 100: add posts until that is the match.
        const rangeEnd = async () => first - 1 + Math.round(((await idOf('max(id)')) - 100 - first + 1) / 2);
        while ((await rangeEnd()) < match) await fillers(2 * (match - (await rangeEnd())));
        Object.assign(searchTuning, {
          rankedCandidates: 50,
          recentDocs: 20,
          spreadRanges: 1,
          spreadRangeIds: 120,
          statsRareMatches: 0,
          statsDenseShare: 0,
        });
        const end = await rangeEnd();
        assert.ok(
          end - 120 < match && match <= end,
          `the range (${end - 120}, ${end}] holds the match ${match}`,
        );
        await searchAsAuthor('xyloid', ['an old xyloid post']);
        // The count (newest ids and the spread range), then the caller's messages and the other kinds, each once.
        const matching = log.statements.filter((s) => /\btsv\b/.test(s));
        assert.equal(matching.length, 3, matching.join('\n\n'));
      } finally {
        Object.assign(searchTuning, standard);
      }
    });

    it('PostgreSQL: a word the statistics call rare is read without the counts, until more rows changed than its bound', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      // 10 ranked candidates, a recent window of 20, no spread ranges, and a bound of 20 matches by the statistics.
      // The rows changed since the ANALYZE are bounded last: the server adds another connection's changes when that
      // connection sends its activity statistics, up to 10 s after they were made, so earlier tests' may still come.
      const standard = { ...searchTuning };
      const standardTiming = { ...wordStatsTiming };
      const BOUND = 20;
      const changedSince = async () =>
        Number(
          (
            await sql<{
              n: string;
            }>`select pg_stat_get_mod_since_analyze('search_docs'::regclass) as n`.execute(ctx.db)
          ).rows[0]?.n,
        );
      /** `n` posts of the author through one connection, whose activity statistics are sent at once. */
      const fillers = (n: number, text: string) =>
        ctx.db.connection().execute(async (conn) => {
          const now = nowIso();
          const rows = Array.from({ length: n }, (_, i) => ({
            uuid: uuidv7(),
            user_uuid: author.uuid,
            body: `${text} ${i}`,
            visibility: 'public',
            language: 'en',
            created_at: now,
            updated_at: now,
          }));
          await conn.insertInto('posts').values(rows).execute();
          await sql`select pg_stat_force_next_flush()`.execute(conn);
        });
      /** Whether the density count (the newest ids, and the spread ranges) ran in the last search. */
      const counted = () => log.statements.some((s) => /\bas newest\b/.test(s));
      try {
        await post('an old xenolith post');
        await fillers(BOUND + 5, 'newer filler');
        await sql`analyze search_docs`.execute(ctx.db);
        Object.assign(searchTuning, {
          rankedCandidates: 10,
          recentDocs: 20,
          spreadRanges: 0,
          statsRareMatches: BOUND,
          statsChangedRows: 1_000_000,
          // The dense words' reads are tested in word-stats.test.ts: here `filler` is counted.
          statsDenseShare: 0,
        });
        // Read within a second of the analysis (shortened from a minute), the statistics may predate its commit: used
        // (only plans depend on them), and read again once the second has passed.
        Object.assign(wordStatsTiming, { settleMs: 1000 });
        await searchAsAuthor('xenolith', ['an old xenolith post']);
        assert.equal(log.statements.filter((s) => /\bpg_stats_ext_exprs\b/.test(s)).length, 1);
        assert.equal(counted(), false, 'statistics read right after the analysis are used');
        await searchAsAuthor('xenolith', ['an old xenolith post']);
        assert.equal(
          log.statements.filter((s) => /\bpg_stats_ext_exprs\b/.test(s)).length,
          0,
          'not read again before the second has passed',
        );
        await new Promise((resolve) => setTimeout(resolve, 1100));
        // One match by the statistics: the caller's messages and the other kinds, each read once through GIN, and no
        // count before them (docs/search.md, "Rare words by the statistics"). The statistics are read again, once.
        await searchAsAuthor('xenolith', ['an old xenolith post']);
        assert.equal(log.statements.filter((s) => /\bpg_stats_ext_exprs\b/.test(s)).length, 1);
        const matching = log.statements.filter((s) => /\btsv\b/.test(s) && !/\bpg_stats_ext_exprs\b/.test(s));
        assert.equal(matching.length, 2, matching.join('\n\n'));
        assert.equal(counted(), false);
        // A word in more documents than the bound is counted as before.
        log.statements.length = 0;
        const common = await injectWithToken(app, {
          method: 'GET',
          url: '/search?query=filler',
          token: author.token,
          headers: { 'cache-control': 'no-cache' },
        });
        assert.equal(common.statusCode, 200, common.body);
        assert.equal(body(common).data.length, 20);
        assert.equal(counted(), true, 'a word listed in more than BOUND documents is counted');
        // Statistics turned off: counted again.
        searchTuning.statsRareMatches = 0;
        await searchAsAuthor('xenolith', ['an old xenolith post']);
        assert.equal(counted(), true, 'statsRareMatches 0 turns the statistics off');
        searchTuning.statsRareMatches = BOUND;
        // Read once per ANALYZE: the next search finds the word rare without reading them again.
        await searchAsAuthor('xenolith', ['an old xenolith post']);
        assert.equal(counted(), false);
        assert.equal(log.statements.filter((s) => /\bpg_stats_ext_exprs\b/.test(s)).length, 0);
        // More rows changed since the ANALYZE than their bound: the statistics are too old, so the word is counted.
        await fillers(BOUND + 1, 'later filler');
        for (let i = 0; i < 50 && (await changedSince()) <= BOUND; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        assert.ok((await changedSince()) > BOUND, 'the server counted the rows changed since the ANALYZE');
        searchTuning.statsChangedRows = BOUND;
        await searchAsAuthor('xenolith', ['an old xenolith post']);
        assert.equal(counted(), true, 'rows changed since the ANALYZE keep the count');
      } finally {
        Object.assign(searchTuning, standard);
        Object.assign(wordStatsTiming, standardTiming);
      }
    });

    it('GET /karma/{uuid} reads the record once: its Owner check answers with it', async () => {
      const record = await ctx.db
        .selectFrom('karma')
        .selectAll()
        .where('user_uuid', '=', author.uuid)
        .orderBy('uuid')
        .executeTakeFirstOrThrow();
      const read = async (token: string) => {
        log.statements.length = 0;
        const res = await injectWithToken(app, { method: 'GET', url: `/karma/${record.uuid}`, token });
        return { res, reads: log.statements.filter((s) => /from "karma"/.test(s)) };
      };
      const own = await read(author.token);
      assert.equal(own.res.statusCode, 200, own.res.body);
      assert.equal(own.reads.length, 1, own.reads.join('\n'));
      assert.deepEqual(
        { uuid: body(own.res).data.uuid, points: body(own.res).data.points, event: body(own.res).data.event },
        { uuid: record.uuid, points: Number(record.points), event: record.event },
      );
      // Read again: nothing was committed since, so the record comes from the exact read cache; asked with
      // Cache-Control: no-cache it is read anew. PostgreSQL's data version is the server's snapshot, which commits in
      // other databases (test files running at the same time) move too: the pair is read again until none came
      // between its two reads.
      let cachedReads = 1;
      for (let i = 0; i < 5 && cachedReads > 0; i++) {
        await read(author.token);
        cachedReads = (await read(author.token)).reads.length;
      }
      assert.equal(cachedReads, 0);
      log.statements.length = 0;
      const fresh = await injectWithToken(app, {
        method: 'GET',
        url: `/karma/${record.uuid}`,
        token: author.token,
        headers: { 'cache-control': 'no-cache' },
      });
      assert.equal(fresh.statusCode, 200, fresh.body);
      assert.equal(log.statements.filter((s) => /from "karma"/.test(s)).length, 1);
      // Someone else's record still answers as a missing one.
      const foreign = await read(mentioned.token);
      assert.equal(foreign.res.statusCode, 404, foreign.res.body);
      assert.equal(body(foreign.res).error.code, 'object_not_found');
    });
  });
}

for (const dialect of testDialects()) {
  describe(`association audience given by the writer [${dialect.name}]`, () => {
    let t: LoggedApp;
    let author: TestUser;

    before(async () => {
      t = await startLoggedApp(dialect, UNLIMITED);
      author = await t.createUser();
    });
    after(async () => t?.close());

    const audienceOf = (targetUuid: string) =>
      t.ctx.db
        .selectFrom('tag_associations')
        .select(['audience', 'audience_owner', 'audience_other'])
        .where('target_uuid', '=', targetUuid)
        .execute();

    it('a post extracts its tags with its own audience; a wrong or missing copy is put right by the database', async () => {
      const res = await t.inject({
        method: 'POST',
        url: '/posts',
        token: author.token,
        payload: { body: 'only for friends #closecircle', visibility: 'friends' },
      });
      assert.equal(res.statusCode, 201, res.body);
      const postUuid = body(res).data.uuid as string;
      assert.deepEqual(await audienceOf(postUuid), [
        { audience: 'friends', audience_owner: author.uuid, audience_other: null },
      ]);
      const tag = await t.ctx.db
        .selectFrom('tags')
        .select('uuid')
        .where('name_key', '=', 'closecircle')
        .executeTakeFirstOrThrow();
      const now = nowIso();
      const row = (uuid: string, userUuid: string) => ({
        uuid,
        tag_uuid: tag.uuid,
        user_uuid: userUuid,
        target_uuid: postUuid,
        target_type: 'post',
        language: 'en',
        created_at: now,
        updated_at: now,
      });
      const other = await t.createUser();
      const third = await t.createUser();
      // A writer claiming the friends-only post is public, and one giving no copy at all.
      await t.ctx.db
        .insertInto('tag_associations')
        .values({ ...row(uuidv7(), other.uuid), audience: 'public', audience_owner: other.uuid })
        .execute();
      await t.ctx.db.insertInto('tag_associations').values(row(uuidv7(), third.uuid)).execute();
      const rows = await audienceOf(postUuid);
      assert.equal(rows.length, 3);
      for (const r of rows) {
        assert.deepEqual(r, { audience: 'friends', audience_owner: author.uuid, audience_other: null });
      }
    });
  });
}

for (const dialect of testDialects()) {
  describe(`tag counts under parallel posts [${dialect.name}]`, () => {
    let t: LoggedApp;
    before(async () => {
      t = await startLoggedApp(dialect, UNLIMITED);
    });
    after(async () => t?.close());

    it('parallel posts naming the same tags in different orders all succeed and count every use', async () => {
      const authors = await Promise.all(Array.from({ length: 4 }, () => t.createUser()));
      const texts = ['#alpha #beta #gamma', '#gamma #beta #alpha', '#beta #alpha', '#gamma #alpha'];
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          t.inject({
            method: 'POST',
            url: '/posts',
            token: (authors[i % authors.length] as TestUser).token,
            payload: { body: `parallel ${i} ${texts[i % texts.length]}` },
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.statusCode).filter((s) => s !== 201),
        [],
        results.find((r) => r.statusCode !== 201)?.body,
      );
      const rows = await t.ctx.db
        .selectFrom('tags as t')
        .select([
          't.name_key',
          't.associations_count',
          (eb) =>
            eb
              .selectFrom('tag_associations as ta')
              .select(eb.fn.countAll().as('n'))
              .whereRef('ta.tag_uuid', '=', 't.uuid')
              .as('stored'),
        ])
        .where('t.name_key', 'in', ['alpha', 'beta', 'gamma'])
        .orderBy('t.name_key')
        .execute();
      assert.deepEqual(
        rows.map((r) => [r.name_key, Number(r.associations_count), Number(r.stored)]),
        [
          ['alpha', 40, 40],
          ['beta', 30, 30],
          ['gamma', 30, 30],
        ],
      );
    });
  });
}
