import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { DbHandle } from '../../src/db/connect.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { sqliteMigratedTo, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { befriend, call, getFresh } from './world.ts';

// A guest's search, and any search limited to a language, is filtered inside SQLite's full-text index by the scope
// tokens of migration 0030 (docs/search.md, "The scope inside the full-text index (SQLite)"): a deep page then skips
// matches without reading their rows. A skipped match the filter let through by mistake (a private post, another
// language, a token left behind by an edit) would shift every later page, so each deep page is compared with the
// matches in scope counted here, newest first, before and after edits of visibility and language; PostgreSQL must
// answer the same.
const TUNING = { rankedCandidates: 4, recentDocs: 40 };
const LANGUAGES = ['en', 'de', 'fr'] as const;
const VISIBILITIES = ['public', 'friends', 'private', 'public'] as const;

interface Doc {
  uuid: string;
  language: string;
  visibility: string;
  /** For a comment, its post (whose visibility it has). */
  post?: Doc;
}

for (const dialect of testDialects()) {
  describe(`search: the scope inside the full-text index [${dialect.name}]`, () => {
    let t: TestApp;
    let owner: TestUser;
    let friend: TestUser;
    // Every mango document in creation order, which is the walk's order reversed.
    const docs: Doc[] = [];
    const standard = { ...searchTuning };

    const visibilityOf = (d: Doc) => (d.post ? d.post.visibility : d.visibility);
    /** The guest's matches, newest first: public, in `language` when given. */
    const guestSees = (language?: string) =>
      docs
        .filter((d) => visibilityOf(d) === 'public' && (language === undefined || d.language === language))
        .map((d) => d.uuid)
        .reverse();
    /** Pages of 3 from `offset` on (every one past the 4 ranked candidates: the walk's own slices). */
    const deepPages = async (url: string, token: string, from: number, total: number) => {
      const got: string[] = [];
      for (let offset = from; offset < total + 3; offset += 3) {
        const page = await getFresh(t, `${url}&limit=3&offset=${offset}`, token);
        got.push(...page.map((i: { uuid: string }) => i.uuid));
      }
      return got;
    };
    const assertGuestPages = async (label: string) => {
      for (const language of [undefined, ...LANGUAGES]) {
        const expected = guestSees(language);
        assert.ok(expected.length > 8, `${label}: ${expected.length} matches, too few to page`);
        const url = `/search?query=mango${language ? `&language=${language}` : ''}`;
        const whole = (await getFresh(t, `${url}&limit=100`, t.guest)).map((i: { uuid: string }) => i.uuid);
        assert.deepEqual(
          new Set(whole),
          new Set(expected),
          `${label}, ${language ?? 'any language'}: every match`,
        );
        assert.deepEqual(
          await deepPages(url, t.guest, TUNING.rankedCandidates, expected.length),
          expected.slice(TUNING.rankedCandidates),
          `${label}, ${language ?? 'any language'}: deep pages newest first`,
        );
      }
    };

    before(async () => {
      t = await startTestApp(dialect);
      owner = await t.createUser('guava_owner');
      friend = await t.createUser('guava_friend');
      await befriend(t, owner, friend);
      for (let i = 0; i < 72; i++) {
        const language = LANGUAGES[i % LANGUAGES.length] as string;
        const visibility = VISIBILITIES[i % VISIBILITIES.length] as string;
        const post = await call(t, 'POST', '/posts', owner.token, {
          body: `mango ${i}`,
          visibility,
          language,
        });
        const doc: Doc = { uuid: post.uuid, language, visibility };
        docs.push(doc);
        if (i % 5 === 0) {
          const commentLanguage = LANGUAGES[(i + 1) % LANGUAGES.length] as string;
          const comment = await call(t, 'POST', `/posts/${post.uuid}/comments`, owner.token, {
            body: `mango said ${i}`,
            language: commentLanguage,
          });
          docs.push({ uuid: comment.uuid, language: commentLanguage, visibility, post: doc });
        }
        // Documents without the word between the matches.
        if (i % 4 === 0) await call(t, 'POST', '/posts', owner.token, { body: `papaya ${i}`, language });
      }
      Object.assign(searchTuning, TUNING);
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('a guest pages through public matches only, in any language and in each one', async () => {
      await assertGuestPages('as written');
    });

    it('a post made private, with its comments, and a post moved to another language leave the pages they were on', async () => {
      const commented = docs.find((d) => d.post && d.post.visibility === 'public')?.post;
      assert.ok(commented, 'a public post with a comment');
      await call(t, 'POST', `/posts/${commented.uuid}/update`, owner.token, { visibility: 'private' });
      commented.visibility = 'private';
      const moved = docs.find((d) => !d.post && d.visibility === 'public' && d.language === 'de');
      assert.ok(moved);
      await call(t, 'POST', `/posts/${moved.uuid}/update`, owner.token, { language: 'fr' });
      moved.language = 'fr';
      const opened = docs.find((d) => !d.post && d.visibility === 'friends' && d.language === 'en');
      assert.ok(opened);
      await call(t, 'POST', `/posts/${opened.uuid}/update`, owner.token, { visibility: 'public' });
      opened.visibility = 'public';
      await assertGuestPages('after the edits');
    });

    it('the owner and a friend still page through what they may see, in a language', async () => {
      for (const [who, token, sees] of [
        ['owner', owner.token, () => true],
        ['friend', friend.token, (d: Doc) => visibilityOf(d) !== 'private'],
      ] as const) {
        const expected = docs
          .filter((d) => sees(d) && d.language === 'de')
          .map((d) => d.uuid)
          .reverse();
        const url = '/search?query=mango&language=de';
        assert.deepEqual(
          await deepPages(url, token, TUNING.rankedCandidates, expected.length),
          expected.slice(TUNING.rankedCandidates),
          who,
        );
      }
    });

    if (dialect.name === 'sqlite') {
      it('the index holds each document under its visibility and language as they are now', async () => {
        const ids = async (match: string) =>
          new Set(
            (
              await sql<{ uuid: string }>`select d.uuid from search_fts f join search_docs d on d.id = f.rowid
                where search_fts match ${match}`.execute(t.ctx.db)
            ).rows.map((r) => r.uuid),
          );
        const mango = (filter: string) => ids(`{title body} : "mango" AND kind : "${filter}"`);
        for (const v of ['public', 'friends', 'private']) {
          const expected = new Set(docs.filter((d) => visibilityOf(d) === v).map((d) => d.uuid));
          assert.deepEqual(await mango(`v${v}`), expected, v);
        }
        for (const l of LANGUAGES) {
          assert.deepEqual(
            await mango(`l${l}`),
            new Set(docs.filter((d) => d.language === l).map((d) => d.uuid)),
            l,
          );
        }
        await sql
          .raw(`insert into search_fts(search_fts, rank) values ('integrity-check', 0)`)
          .execute(t.ctx.db);
      });
    }
  });
}

// Migration 0030 indexes again every document a database already holds, with its scope tokens.
describe('search: migration 0030 re-indexes existing documents with their scope [sqlite]', () => {
  let db: Awaited<ReturnType<typeof sqliteMigratedTo>>;
  let handle: DbHandle;
  const author = uuidv7();

  before(async () => {
    db = await sqliteMigratedTo('0029-search-fold-ascii');
    handle = db.handle;
    const now = nowIso();
    await sql`insert into users (uuid, username, username_key, email, email_key, password_hash, language, role,
      karma, created_at, updated_at) values (${author}, 'medlar', 'medlar', 'medlar@example.test',
      'medlar@example.test', 'x', 'en', 'user', 0, ${now}, ${now})`.execute(handle.db);
    for (const [visibility, language] of [
      ['public', 'en'],
      ['private', 'de'],
      ['friends', 'fr'],
    ]) {
      await sql`insert into posts (uuid, user_uuid, body, visibility, language, created_at, updated_at)
        values (${uuidv7()}, ${author}, ${`quince ${visibility}`}, ${visibility}, ${language}, ${now}, ${now})`.execute(
        handle.db,
      );
    }
    assert.equal((await migrateToLatest(handle.db, 'sqlite'))[0], '0030-search-scope-tokens');
  });
  after(async () => {
    await db?.close();
  });

  it('finds each post once by its words, under its visibility and language only', async () => {
    for (const table of ['search_fts', 'search_fts_en']) {
      const bodies = async (match: string) =>
        (
          await sql<{
            body: string;
          }>`select d.body from ${sql.table(table)} f join search_docs d on d.id = f.rowid
            where ${sql.table(table)} match ${match} order by d.id`.execute(handle.db)
        ).rows.map((r) => r.body);
      await sql.raw(`insert into ${table}(${table}, rank) values ('integrity-check', 0)`).execute(handle.db);
      assert.deepEqual(await bodies('{title body} : "quince"'), [
        'quince public',
        'quince private',
        'quince friends',
      ]);
      assert.deepEqual(await bodies('{title body} : "quince" NOT kind : "vprivate" NOT kind : "vfriends"'), [
        'quince public',
      ]);
      assert.deepEqual(await bodies('kind : "lde"'), ['quince private']);
      // The user's document keeps its kind alone: a language limit leaves users to the OR of ftsMatch.
      assert.deepEqual(await bodies('kind : "len"'), ['quince public']);
      assert.deepEqual(await bodies('kind : "user"'), [null]);
    }
  });
});
