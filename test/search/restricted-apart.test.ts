import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId, sql } from 'kysely';
import { search } from '../../src/modules/search/search.service.ts';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { recordingQueries, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { befriend, call, getFresh, insertMedia } from './world.ts';

// A signed-in caller's deep page on SQLite finds the matches the full-text filter decides alone (public content,
// users, networks, the caller's messages) without their rows, and checks only the friends-only and private ones
// against the caller, among the ids the others reach (docs/search.md, "Signed-in deep pages (SQLite)"). A private
// post of someone else let through, a friend's friends-only post left out, or a bound that cuts the checked part
// short would each shift every later page; so every deep page is compared with the matches the test itself counts
// for the caller, in every kind, language and direction the walk takes. PostgreSQL must answer the same.
const TUNING = { rankedCandidates: 4, recentDocs: 40 };
const VISIBILITIES = ['public', 'friends', 'private'] as const;
const LANGUAGES = ['en', 'de'] as const;

interface Doc {
  uuid: string;
  kind: 'post' | 'comment' | 'media' | 'messages';
  owner: string;
  /** For a message, its recipient. */
  recipient?: string;
  /** For a comment, its post. */
  post?: string;
  visibility: string;
  language: string;
  words: string;
}

for (const dialect of testDialects()) {
  describe(`search: a signed-in caller's deep pages [${dialect.name}]`, () => {
    let t: TestApp;
    let viewer: TestUser;
    let friend: TestUser;
    let stranger: TestUser;
    // Every document holding a test word, in creation order (the walk's order, or its reverse).
    const docs: Doc[] = [];
    const standard = { ...searchTuning };

    /** What `who` may see: public items, their own, their friends' friends-only ones, their messages. */
    const sees = (who: TestUser, d: Doc) => {
      if (d.kind === 'messages') return d.owner === who.uuid || d.recipient === who.uuid;
      if (d.visibility === 'public' || d.owner === who.uuid) return true;
      const friends = who === viewer ? [friend.uuid] : who === friend ? [viewer.uuid] : [];
      return d.visibility === 'friends' && friends.includes(d.owner);
    };
    /** `who`'s matches of a one-word query (a prefix), newest first or oldest first, of some kinds, in a language. */
    const expected = (
      who: TestUser,
      prefix: string,
      options: { kinds?: string[]; language?: string; oldestFirst?: boolean } = {},
    ) => {
      const kept = docs
        .filter((d) => d.words.split(' ').some((w) => w.startsWith(prefix)) && sees(who, d))
        .filter((d) => !options.kinds || options.kinds.includes(d.kind))
        .filter((d) => !options.language || d.language === options.language)
        .map((d) => d.uuid);
      return options.oldestFirst ? kept : kept.reverse();
    };
    /**
     * Asserts the page of 2 at every offset from `from` past the last match: each item of the walk is then the
     * last one a page needs, where the checked part's bound is cut (the ids the decided matches reach).
     */
    const assertEveryWindow = async (
      url: string,
      token: string,
      want: string[],
      from: number,
      column?: string,
    ) => {
      for (let offset = from; offset <= want.length; offset++) {
        const data = await getFresh(t, `${url}&limit=2&offset=${offset}`, token);
        const page = ((column ? data[column] : data) as { uuid: string }[]).map((i) => i.uuid);
        assert.deepEqual(
          page,
          want.slice(offset, offset + 2),
          `${url}${column ? ` ${column}` : ''} at ${offset}`,
        );
      }
    };

    /** assertEveryWindow for `/search?query=word` as the viewer, the friend and the stranger. */
    const assertForEachCaller = async (word: string) => {
      for (const who of [viewer, friend, stranger]) {
        const want = expected(who, word);
        await assertEveryWindow(`/search?query=${word}`, who.token, want, TUNING.rankedCandidates);
      }
    };

    const post = async (author: TestUser, words: string, visibility: string, language: string) => {
      const created = await call(t, 'POST', '/posts', author.token, { body: words, visibility, language });
      docs.push({ uuid: created.uuid, kind: 'post', owner: author.uuid, visibility, language, words });
      return created.uuid as string;
    };

    before(async () => {
      t = await startTestApp(dialect);
      viewer = await t.createUser('apart_viewer');
      friend = await t.createUser('apart_friend');
      stranger = await t.createUser('apart_stranger');
      await befriend(t, viewer, friend);
      const authors = [viewer, friend, stranger];
      for (let i = 0; i < 54; i++) {
        const author = authors[i % 3] as TestUser;
        const visibility = VISIBILITIES[Math.floor(i / 3) % 3] as string;
        const language = LANGUAGES[Math.floor(i / 9) % 2] as string;
        const uuid = await post(author, `lychee ${i}`, visibility, language);
        if (i % 4 === 0) {
          // A comment has its post's owner and visibility in the index.
          const words = `lychee said ${i}`;
          const comment = await call(t, 'POST', `/posts/${uuid}/comments`, author.token, {
            body: words,
            language,
          });
          docs.push({
            uuid: comment.uuid,
            kind: 'comment',
            post: uuid,
            owner: author.uuid,
            visibility,
            language,
            words,
          });
        }
        if (i % 9 === 0) {
          const title = `lychee picture ${i}`;
          const media = await insertMedia(t, author, { title, description: 'a fruit', visibility, language });
          docs.push({ uuid: media, kind: 'media', owner: author.uuid, visibility, language, words: title });
        }
        if (i % 6 === 0) {
          // Messages between the viewer and the stranger, and between the friend and the stranger.
          const [from, to] = i % 12 === 0 ? [viewer, stranger] : [friend, stranger];
          const words = `lychee note ${i}`;
          const message = await call(t, 'POST', '/messages', from.token, {
            recipient_uuid: to.uuid,
            body: words,
          });
          docs.push({
            uuid: message.uuid,
            kind: 'messages',
            owner: from.uuid,
            recipient: to.uuid,
            visibility: 'message',
            language: 'en',
            words,
          });
        }
        if (i % 5 === 0) await call(t, 'POST', '/posts', author.token, { body: `papaya ${i}` });
      }
      // A word with two public matches and many restricted ones: the decided matches fall short of a deep page, and
      // the checked part must walk every id.
      for (let i = 0; i < 24; i++) {
        const author = authors[i % 3] as TestUser;
        await post(
          author,
          `rambutan ${i}`,
          i % 12 === 5 ? 'public' : (VISIBILITIES[1 + (i % 2)] as string),
          'en',
        );
      }
      // English posts found by the English stemmer only (`lychees` as typed is not a prefix of `lychee`), some with the
      // word as typed too.
      for (let i = 0; i < 6; i++) {
        await post(
          [friend, stranger][i % 2] as TestUser,
          `lychees ${i}`,
          VISIBILITIES[i % 3] as string,
          'en',
        );
      }
      // A word in public posts with one private post of the viewer's and one friends-only post of the friend's among
      // them: the page that ends just below either reaches it only if the checked part's bound is exact.
      for (let i = 0; i < 20; i++) {
        const [author, visibility] =
          i === 8
            ? [viewer, 'private']
            : i === 13
              ? [friend, 'friends']
              : i === 4
                ? [stranger, 'private']
                : [stranger, 'public'];
        await post(author, `durian ${i}`, visibility, 'en');
      }
      Object.assign(searchTuning, TUNING);
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('the world holds every kind of match for the viewer to page through', () => {
      const mine = expected(viewer, 'lychee');
      assert.ok(mine.length > 30, `${mine.length} matches`);
      const seen = docs.filter((d) => mine.includes(d.uuid));
      for (const kind of ['post', 'comment', 'media', 'messages']) {
        assert.ok(
          seen.some((d) => d.kind === kind),
          kind,
        );
      }
      assert.ok(seen.some((d) => d.owner === friend.uuid && d.visibility === 'friends'));
      assert.ok(seen.some((d) => d.owner === viewer.uuid && d.visibility === 'private'));
      assert.ok(
        docs.some((d) => d.owner === stranger.uuid && d.visibility !== 'public' && !seen.includes(d)),
      );
    });

    it('every deep page of /search holds what the caller may see, newest first', async () => {
      await assertForEachCaller('lychee');
    });

    it('in a language, on both of English full-text tables, and oldest first', async () => {
      for (const language of LANGUAGES) {
        const url = `/search?query=lychee&language=${language}`;
        const want = expected(viewer, 'lychee', { language });
        await assertEveryWindow(url, viewer.token, want, TUNING.rankedCandidates);
      }
      const oldest = expected(viewer, 'lychee', { oldestFirst: true });
      await assertEveryWindow('/search?query=lychee&order=created_at:asc', viewer.token, oldest, 1);
    });

    it('every deep page of each /search/types column', async () => {
      for (const kind of ['post', 'comment', 'media', 'messages']) {
        const want = expected(viewer, 'lychee', { kinds: [kind] });
        const from = Math.min(TUNING.rankedCandidates, want.length);
        await assertEveryWindow('/search/types?query=lychee', viewer.token, want, from, kind);
      }
    });

    it('a word with fewer public matches than the page still reaches every restricted one in order', async () => {
      await assertForEachCaller('rambutan');
      assert.ok(expected(viewer, 'rambutan').length >= 12, 'the viewer sees more than the public two');
    });

    it('a single restricted match among public ones is on the page that ends at it, in either direction', async () => {
      const newest = expected(viewer, 'durian');
      assert.equal(newest.length, 19);
      await assertEveryWindow('/search?query=durian', viewer.token, newest, TUNING.rankedCandidates);
      const oldest = expected(viewer, 'durian', { oldestFirst: true });
      await assertEveryWindow('/search?query=durian&order=created_at:asc', viewer.token, oldest, 1);
    });

    it('English with its stemmer: matches of either full-text table, each page from both', async () => {
      // Every English `lychee...` word stems as `lychees` does.
      const want = expected(viewer, 'lychee', { language: 'en' });
      assert.ok(want.length > expected(viewer, 'lychees', { language: 'en' }).length + 10);
      await assertEveryWindow(
        '/search?query=lychees&language=en',
        viewer.token,
        want,
        TUNING.rankedCandidates,
      );
    });

    it('a public post made friends-only leaves the pages of those who may no longer see it, comments included', async () => {
      const commented = new Set(docs.filter((d) => d.kind === 'comment').map((d) => d.post));
      const target = docs.find(
        (d) =>
          d.kind === 'post' && d.owner === friend.uuid && d.visibility === 'public' && commented.has(d.uuid),
      );
      assert.ok(target, 'a public post of the friend with a comment');
      await call(t, 'POST', `/posts/${target.uuid}/update`, friend.token, { visibility: 'friends' });
      for (const d of docs) if (d.uuid === target.uuid || d.post === target.uuid) d.visibility = 'friends';
      await assertForEachCaller('lychee');
    });

    it('SQLite checks only the friends-only and private matches, in their own index', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      const params = { query: 'lychee', offset: TUNING.rankedCandidates + 2, limit: 2 };
      const page = await search({ ...t.ctx, readDb: db }, viewer.uuid, params);
      assert.deepEqual(
        page.data.map((i: { uuid: string }) => i.uuid),
        expected(viewer, 'lychee').slice(params.offset, params.offset + 2),
      );
      const statements = nodes.map((node) => t.ctx.db.getExecutor().compileQuery(node, createQueryId()).sql);
      const checked = statements.filter((text) => text.includes('search_docs_restricted'));
      assert.equal(checked.length, 1, statements.join('\n\n'));
      // The other walk reads the index alone: no statement of the walk joins the documents but the page's.
      assert.equal(statements.filter((text) => text.includes('search_docs_scope')).length, 0);
    });

    it('SQLite reads the language of those matches in their index, not in the full-text filter', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      const params = { query: 'lychee', language: 'en', offset: TUNING.rankedCandidates + 2, limit: 2 };
      const page = await search({ ...t.ctx, readDb: db }, viewer.uuid, params);
      assert.deepEqual(
        page.data.map((i: { uuid: string }) => i.uuid),
        expected(viewer, 'lychee', { language: 'en' }).slice(params.offset, params.offset + 2),
      );
      const checked = nodes
        .map((node) => t.ctx.db.getExecutor().compileQuery(node, createQueryId()))
        .filter((q) => q.sql.includes('search_docs_restricted'));
      // One statement per English table (plain and stemmed), each testing the language on the index's column.
      assert.equal(checked.length, 2);
      for (const q of checked) {
        assert.match(q.sql, /d\.language = \?/);
        const tokens = q.parameters.filter((p) => typeof p === 'string' && p.includes('"len"'));
        assert.deepEqual(tokens, []);
      }
      // The index holds the language (migration 0032), so the test reads no row.
      const columns = await sql<{
        name: string;
      }>`select name from pragma_index_info('search_docs_restricted')`.execute(t.ctx.db);
      assert.deepEqual(
        columns.rows.map((c) => c.name),
        ['id', 'visibility', 'owner_uuid', 'language'],
      );
    });
  });
}
