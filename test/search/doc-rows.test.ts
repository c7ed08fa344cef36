// A page's documents are read by uuid after the search found them (findDocRows). On PostgreSQL the reads of one
// event-loop turn share one statement per kind, so concurrent searches read each other's uuids in it: each must get
// its own rows, and nothing another caller may not see may reach them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId } from 'kysely';
import { uuidv7 } from '../../src/db/time.ts';
import { search, searchTypes } from '../../src/modules/search/search.service.ts';
import { findDocRows } from '../../src/modules/search/search-rows.service.ts';
import { recordingQueries, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { befriend, call } from './world.ts';

/**
 * A read connection that commits `edit` once, right after a search's walk answers with `uuid` (a row without its
 * text): before the page's rows are read.
 */
function editAfterWalk(t: TestApp, uuid: string, edit: () => Promise<void>) {
  let armed = true;
  const db = t.ctx.readDb.withPlugin({
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      const rows = args.result.rows as Record<string, unknown>[];
      if (armed && rows.some((r) => r.uuid === uuid && !('body' in r))) {
        armed = false;
        await edit();
      }
      return args.result;
    },
  });
  return { db, ran: () => !armed };
}

for (const dialect of testDialects()) {
  describe(`search: the rows of a page's documents [${dialect.name}]`, () => {
    let t: TestApp;
    let ana: TestUser;
    let ben: TestUser;
    const posts: string[] = [];
    let secret: string;

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      ana = await t.createUser('ana');
      ben = await t.createUser('ben');
      for (let i = 0; i < 3; i++)
        posts.push((await call(t, 'POST', '/posts', ana.token, { body: `zephyr ${i}` })).uuid);
      secret = (await call(t, 'POST', '/posts', ana.token, { body: 'zephyr secret', visibility: 'private' }))
        .uuid;
    });
    after(async () => t?.close());

    it('reads of one turn get their own rows, found ones only (one statement a kind on PostgreSQL)', async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      const ctx = { ...t.ctx, readDb: db };
      // A uuid asked twice, one that is no document's, and a user beside the posts.
      const [a, b] = [[posts[0], posts[1], posts[0]] as string[], [posts[2] as string, uuidv7()]];
      const [first, second, users] = await Promise.all([
        findDocRows(ctx, 'post', a),
        findDocRows(ctx, 'post', b),
        findDocRows(ctx, 'user', [ben.uuid]),
      ]);
      assert.deepEqual(first.map((r) => r.uuid).sort(), posts.slice(0, 2).sort());
      assert.deepEqual(
        second.map((r) => r.uuid),
        [posts[2]],
      );
      assert.deepEqual(
        users.map((r) => r.username),
        ['ben'],
      );
      assert.equal(nodes.length, dialect.name === 'postgres' ? 2 : 3);
      // A later turn reads again.
      assert.deepEqual(
        (await findDocRows(ctx, 'post', [secret])).map((r) => r.body),
        ['zephyr secret'],
      );
      assert.equal(nodes.length, dialect.name === 'postgres' ? 3 : 4);
    });

    it('PostgreSQL asks for the uuids as one array: one statement text whatever their number', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      const ctx = { ...t.ctx, readDb: db };
      await findDocRows(ctx, 'post', posts.slice(0, 1));
      await findDocRows(ctx, 'post', posts);
      const [one, three] = nodes.map((node) => db.getExecutor().compileQuery(node, createQueryId()));
      assert.equal(one?.sql, three?.sql);
      assert.deepEqual(three?.parameters, [posts]);
    });

    it('an item hidden and rewritten between the walk and the read of its row is left out of the page', async () => {
      const open = (await call(t, 'POST', '/posts', ana.token, { body: 'zephyr open for now' })).uuid;
      const between = editAfterWalk(t, open, async () => {
        await call(t, 'POST', `/posts/${open}/update`, ana.token, {
          body: 'zephyr now a secret',
          visibility: 'private',
        });
      });
      const found = await search({ ...t.ctx, readDb: between.db }, ben.uuid, {
        query: 'zephyr',
        order: 'created_at',
      });
      assert.ok(between.ran(), 'the edit ran between the two statements');
      const bodies = (found.data as { body?: string }[]).map((p) => p.body);
      assert.ok(!bodies.includes('zephyr now a secret'), JSON.stringify(bodies));
      assert.deepEqual(
        (found.data as { uuid: string }[]).map((p) => p.uuid),
        [...posts].reverse(),
      );
      const own = await search(t.ctx, ana.uuid, { query: 'zephyr', order: 'created_at' });
      assert.equal((own.data as { uuid: string }[])[0]?.uuid, open, 'its owner still finds it');
      await call(t, 'POST', `/posts/${open}/delete`, ana.token);
    });

    it("a comment is checked by its post's audience as read; a friends-only item a friend may see stays", async () => {
      const cy = await t.createUser('cy');
      await befriend(t, ana, cy);
      const thread = (await call(t, 'POST', '/posts', ana.token, { body: 'a thread' })).uuid;
      const comment = (
        await call(t, 'POST', `/posts/${thread}/comments`, cy.token, { body: 'zephyr remark' })
      ).uuid;
      const shared = (await call(t, 'POST', '/posts', ana.token, { body: 'zephyr shared' })).uuid;
      // Between the walk and the read of the rows: the thread goes private, the shared post friends-only.
      const hideBetween = async (viewer: string | null) => {
        const between = editAfterWalk(t, comment, async () => {
          await call(t, 'POST', `/posts/${thread}/update`, ana.token, { visibility: 'private' });
          await call(t, 'POST', `/posts/${shared}/update`, ana.token, { visibility: 'friends' });
        });
        const found = await search({ ...t.ctx, readDb: between.db }, viewer, {
          query: 'zephyr',
          order: 'created_at',
        });
        assert.ok(between.ran(), 'the edits ran between the two statements');
        return found;
      };
      const reset = async () => {
        await call(t, 'POST', `/posts/${thread}/update`, ana.token, { visibility: 'public' });
        await call(t, 'POST', `/posts/${shared}/update`, ana.token, { visibility: 'public' });
      };
      const uuids = (found: { data: unknown }) => (found.data as { uuid: string }[]).map((x) => x.uuid);
      const asFriend = uuids(await hideBetween(cy.uuid));
      assert.ok(asFriend.includes(shared), "a friend still sees the friends-only post (ana's friends table)");
      assert.ok(
        !asFriend.includes(comment),
        "the comment under the now private post is left out, though it is cy's",
      );
      await reset();
      const asGuest = uuids(await hideBetween(null));
      assert.ok(!asGuest.includes(shared) && !asGuest.includes(comment), JSON.stringify(asGuest));
      await reset();
      const asStranger = uuids(await hideBetween(ben.uuid));
      assert.ok(!asStranger.includes(shared) && !asStranger.includes(comment), JSON.stringify(asStranger));
      for (const post of [shared, thread]) await call(t, 'POST', `/posts/${post}/delete`, ana.token);
    });

    it('/search/types checks the rows of every column as read, with one friends lookup for the whole answer', async () => {
      const [cy, dan] = [await t.createUser('cyra'), await t.createUser('dan')];
      await befriend(t, ana, cy);
      const anaPost = (await call(t, 'POST', '/posts', ana.token, { body: 'quokka from ana' })).uuid;
      const danPost = (await call(t, 'POST', '/posts', dan.token, { body: 'quokka from dan' })).uuid;
      const danThread = (await call(t, 'POST', '/posts', dan.token, { body: 'a thread' })).uuid;
      const remark = (
        await call(t, 'POST', `/posts/${danThread}/comments`, ana.token, { body: 'quokka remark' })
      ).uuid;
      const column = (found: { data: Record<string, unknown[]> }, kind: string) =>
        (found.data[kind] ?? []).map((x) => (x as { uuid: string }).uuid);
      const before = await searchTypes(t.ctx, cy.uuid, { query: 'quokka', order: 'created_at' });
      assert.deepEqual(column(before, 'post'), [danPost, anaPost]);
      assert.deepEqual(column(before, 'comment'), [remark]);
      const between = editAfterWalk(t, anaPost, async () => {
        for (const [post, owner] of [
          [anaPost, ana],
          [danPost, dan],
          [danThread, dan],
        ] as const)
          await call(t, 'POST', `/posts/${post}/update`, owner.token, { visibility: 'friends' });
      });
      const { db: readDb, nodes } = recordingQueries(between.db);
      const found = await searchTypes({ ...t.ctx, readDb }, cy.uuid, {
        query: 'quokka',
        order: 'created_at',
      });
      assert.ok(between.ran(), 'the edits ran between the walk and the reads');
      assert.deepEqual(column(found, 'post'), [anaPost], "ana's friend keeps her post; dan's is gone");
      assert.deepEqual(
        column(found, 'comment'),
        [],
        "the remark under dan's now friends-only thread is gone",
      );
      const friendsLookups = nodes.filter((n) =>
        JSON.stringify(n, (_k, v) => (typeof v === 'bigint' ? String(v) : v)).includes(
          'select f.friend_uuid from friends f',
        ),
      ).length;
      assert.equal(friendsLookups, 1, 'one friends lookup for the answer');
      for (const [post, owner] of [
        [anaPost, ana],
        [danPost, dan],
        [danThread, dan],
      ] as const)
        await call(t, 'POST', `/posts/${post}/delete`, owner.token);
    });

    // Pages come from the searches, which decide who sees what; whether or not the two requests' reads share a turn,
    // each gets its own page.
    it("concurrent searches each get their own page: the owner's private post, never another caller's", async () => {
      const search = (user: TestUser) =>
        call(t, 'GET', '/search?query=zephyr&order=created_at', user.token) as Promise<{ uuid: string }[]>;
      for (let round = 0; round < 5; round++) {
        const [own, other] = await Promise.all([search(ana), search(ben)]);
        // Newest first: the private post is the newest.
        assert.deepEqual(
          own.map((p) => p.uuid),
          [secret, ...[...posts].reverse()],
        );
        assert.deepEqual(
          other.map((p) => p.uuid),
          [...posts].reverse(),
        );
      }
    });
  });
}
