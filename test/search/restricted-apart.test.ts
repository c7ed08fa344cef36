import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
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
    /** `who`'s matches of `word`, newest first (or oldest first), of some kinds, in a language. */
    const expected = (
      who: TestUser,
      word: string,
      options: { kinds?: string[]; language?: string; oldestFirst?: boolean } = {},
    ) => {
      const kept = docs
        .filter((d) => d.words.split(' ').includes(word) && sees(who, d))
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
          docs.push({ uuid: comment.uuid, kind: 'comment', owner: author.uuid, visibility, language, words });
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
      for (const who of [viewer, friend, stranger]) {
        await assertEveryWindow(
          '/search?query=lychee',
          who.token,
          expected(who, 'lychee'),
          TUNING.rankedCandidates,
        );
      }
    });

    it('in a language, on both of English full-text tables, and oldest first', async () => {
      for (const language of LANGUAGES) {
        const url = `/search?query=lychee&language=${language}`;
        await assertEveryWindow(url, viewer.token, expected(viewer, 'lychee', { language }), 4);
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
      for (const who of [viewer, friend, stranger]) {
        await assertEveryWindow(
          '/search?query=rambutan',
          who.token,
          expected(who, 'rambutan'),
          TUNING.rankedCandidates,
        );
      }
      assert.ok(expected(viewer, 'rambutan').length >= 12, 'the viewer sees more than the public two');
    });

    it('a single restricted match among public ones is on the page that ends at it, in either direction', async () => {
      const newest = expected(viewer, 'durian');
      assert.equal(newest.length, 19);
      await assertEveryWindow('/search?query=durian', viewer.token, newest, TUNING.rankedCandidates);
      const oldest = expected(viewer, 'durian', { oldestFirst: true });
      await assertEveryWindow('/search?query=durian&order=created_at:asc', viewer.token, oldest, 1);
    });
  });
}
