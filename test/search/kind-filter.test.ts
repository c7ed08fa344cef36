// SQLite's FTS5 kind filter names the side of the kinds with fewer documents, counted per app (withKindDocs): where
// posts are most of the documents, `NOT` the other kinds reads fewer doclist entries than `kind : "post"`, and the
// other way round once comments outnumber them (docs/search.md, "The kind filter by the documents"). Either side
// keeps the same documents: every page of each `/search/types` column is compared with the items the test made, and
// the statements show which side the filter names as the counts change. PostgreSQL has no such filter and must
// answer the same.
import assert from 'node:assert/strict';
import { after, before, describe, it, mock } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createQueryId } from 'kysely';
import { searchTypes } from '../../src/modules/search/search.service.ts';
import {
  KIND_DOCS_MAX_AGE_MS,
  KIND_DOCS_RETRY_MS,
} from '../../src/modules/search/search-kind-docs.service.ts';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { recordingQueries, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { call, getFresh } from './world.ts';

// Past 5 ranked candidates (1 per column of /search/types) every page is the walk's own.
const TUNING = { rankedCandidates: 5, recentDocs: 40 };
const POSTS = 24;
const FIRST_COMMENTS = 3;
const MORE_COMMENTS = 40;
const PARAMS = { query: 'quince', order: 'created_at', limit: 100 };
// The other kinds as the filter names them, in DOC_KINDS order (a guest's walk leaves messages out either way).
const NOT_POSTS = 'NOT kind : ("user" OR "network" OR "comment" OR "media" OR "messages")';
const NOT_COMMENTS = 'NOT kind : ("user" OR "network" OR "post" OR "media" OR "messages")';

for (const dialect of testDialects()) {
  describe(`search: the kind filter by the documents of each kind [${dialect.name}]`, () => {
    let t: TestApp;
    let author: TestUser;
    const standard = { ...searchTuning };
    // Newest first, as `order=created_at` lists them.
    const posts: string[] = [];
    const comments: string[] = [];

    const comment = async (text: string) => {
      const made = await call(t, 'POST', `/posts/${posts[0]}/comments`, author.token, { body: text });
      comments.unshift(made.uuid);
    };
    /** Every item of one column of `/search/types`, read 3 at a time through HTTP. */
    const column = async (kind: string) => {
      const all: string[] = [];
      for (let offset = 0; ; offset += 3) {
        const url = `/search/types?query=quince&order=created_at&limit=3&offset=${offset}`;
        const page = ((await getFresh(t, url, t.guest))[kind] ?? []) as { uuid: string }[];
        all.push(...page.map((i) => i.uuid));
        if (page.length < 3) return all;
      }
    };

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      Object.assign(searchTuning, TUNING);
      author = await t.createUser('quinn');
      for (let i = 0; i < POSTS; i++) {
        posts.unshift((await call(t, 'POST', '/posts', author.token, { body: `quince tart ${i}` })).uuid);
      }
      for (let i = 0; i < FIRST_COMMENTS; i++) await comment(`quince jam ${i}`);
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('every page of the posts and comments columns holds each item once, newest first', async () => {
      assert.deepEqual(await column('post'), posts);
      assert.deepEqual(await column('comment'), comments);
    });

    /**
     * A searcher on its own reading database (its counts are taken on its first search, as an app's are): each call
     * runs `/search/types` as a guest and gives the FTS5 match texts of its statements and the posts and comments found.
     */
    const searcher = (readDb: TestApp['ctx']['readDb']) => {
      const { db, nodes } = recordingQueries(readDb);
      const ctx = { ...t.ctx, readDb: db };
      return async () => {
        nodes.length = 0;
        const found = await searchTypes(ctx, null, PARAMS);
        const texts = nodes
          .flatMap((node) => db.getExecutor().compileQuery(node, createQueryId()).parameters)
          .filter((p): p is string => typeof p === 'string' && p.includes('{title body}'));
        const uuids = (kind: string) => (found.data[kind] ?? []).map((i: { uuid: string }) => i.uuid);
        return { texts, posts: uuids('post'), comments: uuids('comment') };
      };
    };
    type Searched = Awaited<ReturnType<ReturnType<typeof searcher>>>;
    const names = (searched: Searched, text: string) => searched.texts.some((t) => t.includes(text));
    /** Searches until a statement names `text` (a count started in the background), at most 2 s. */
    const until = async (search: () => Promise<Searched>, text: string) => {
      let searched = await search();
      for (let i = 0; i < 200 && !names(searched, text); i++) {
        await sleep(10);
        searched = await search();
      }
      return searched;
    };

    it('SQLite names the posts by the other kinds while they are most documents, and by their own once comments outnumber them', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      const search = searcher(t.ctx.readDb);
      // 24 posts against 1 user and 3 comments, counted before the first search goes on.
      const first = await search();
      assert.ok(names(first, NOT_POSTS), first.texts.join('\n'));
      assert.ok(!names(first, 'kind : ("post")'), first.texts.join('\n'));
      assert.ok(names(first, 'kind : ("comment")'), first.texts.join('\n'));
      assert.deepEqual(first.posts, posts);

      // 43 comments and 1 user against 24 posts; the counts are taken again only once they are due.
      for (let i = 0; i < MORE_COMMENTS; i++) await comment(`quince curd ${i}`);
      const notDue = await search();
      assert.ok(names(notDue, NOT_POSTS), notDue.texts.join('\n'));
      assert.deepEqual(notDue.comments, comments);

      mock.timers.enable({ apis: ['Date'], now: Date.now() });
      try {
        mock.timers.tick(KIND_DOCS_MAX_AGE_MS + 1);
        // This search starts the new count and goes on with the last one; a later one finds the new count.
        const due = await search();
        assert.ok(names(due, NOT_POSTS), due.texts.join('\n'));
        const later = await until(search, 'kind : ("post")');
        assert.ok(names(later, 'kind : ("post")'), later.texts.join('\n'));
        assert.ok(names(later, NOT_COMMENTS), later.texts.join('\n'));
        assert.deepEqual(later.posts, posts);
        assert.deepEqual(later.comments, comments);
      } finally {
        mock.timers.reset();
      }
    });

    it('SQLite without a count names the fewer tokens, and counts again soon after a failure', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      if (comments.length === FIRST_COMMENTS) {
        for (let i = 0; i < MORE_COMMENTS; i++) await comment(`quince curd ${i}`);
      }
      // The count of the documents of each kind fails while `failing` holds; every other statement runs.
      let failing = true;
      const refusing = t.ctx.readDb.withPlugin({
        transformQuery: ({ node }) => {
          if (failing && node.kind === 'RawNode' && node.sqlFragments.join('?').includes('group by kind')) {
            throw new Error('the count fails');
          }
          return node;
        },
        transformResult: async ({ result }) => result,
      });
      const search = searcher(refusing);
      mock.timers.enable({ apis: ['Date'], now: Date.now() });
      try {
        const failed = await search();
        assert.ok(names(failed, 'kind : ("post")'), failed.texts.join('\n'));
        assert.ok(names(failed, 'kind : ("comment")'), failed.texts.join('\n'));
        assert.deepEqual(failed.posts, posts);
        assert.deepEqual(failed.comments, comments);
        failing = false;
        // Not due yet: no count, the same filter.
        assert.ok(names(await search(), 'kind : ("comment")'));
        mock.timers.tick(KIND_DOCS_RETRY_MS + 1);
        const counted = await until(search, NOT_COMMENTS);
        assert.ok(names(counted, NOT_COMMENTS), counted.texts.join('\n'));
        assert.deepEqual(counted.comments, comments);
      } finally {
        mock.timers.reset();
      }
    });

    it('after the comments, every page of each column still holds each item once', async () => {
      if (comments.length === FIRST_COMMENTS) {
        for (let i = 0; i < MORE_COMMENTS; i++) await comment(`quince curd ${i}`);
      }
      assert.deepEqual(await column('post'), posts);
      assert.deepEqual(await column('comment'), comments);
    });

    it('a deep page past the posts left after deletes is empty, though the counts taken before still hold them', async () => {
      // Its own reading database, counted now: 24 posts, more than twice the offset.
      const { db, nodes } = recordingQueries(t.ctx.readDb);
      const ctx = { ...t.ctx, readDb: db };
      // Relevance: past the ranked candidates (1 per column) the page is the walk's, newest first.
      const deep = { query: 'quince', offset: 6, limit: 3 };
      const before = await searchTypes(ctx, null, deep);
      assert.deepEqual(
        before.data.post?.map((i: { uuid: string }) => i.uuid),
        posts.slice(6, 9),
      );
      // The oldest 20 go; the comments are on the newest, which stays.
      for (const uuid of posts.splice(4)) await call(t, 'POST', `/posts/${uuid}/delete`, author.token);
      nodes.length = 0;
      const after = await searchTypes(ctx, null, deep);
      assert.deepEqual(after.data.post, []);
      assert.deepEqual((await getFresh(t, '/search/types?query=quince&limit=3&offset=6', t.guest)).post, []);
      assert.deepEqual(await column('post'), posts);
      if (dialect.name === 'sqlite') {
        // The posts were counted at more than twice the offset, so they are not counted again; the one user still is.
        const counts = nodes
          .map((node) => db.getExecutor().compileQuery(node, createQueryId()))
          .filter((q) => q.sql.includes('select 1 from search_docs'));
        assert.ok(counts.some((q) => q.parameters.includes('user')));
        assert.ok(!counts.some((q) => q.parameters.includes('post')));
      }
    });
  });
}
