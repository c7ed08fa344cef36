// Single-tag reads (GET /tags/{uuid}) by several viewers at once. On PostgreSQL the reads of one event-loop turn share
// one statement, each with its own viewer: every viewer must get the associations they may see, and a tag hidden
// from one viewer must stay hidden from them while another reads it in the same statement.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId } from 'kysely';
import { findVisibleTagWithAssociations } from '../../src/modules/tag/tag.repository.ts';
import { findVisibleTag } from '../../src/modules/tag/tag-reads.service.ts';
import {
  body,
  recordingQueries,
  startTestApp,
  type TestApp,
  type TestUser,
  testDialects,
} from '../helper.ts';
import { befriend, call } from '../search/world.ts';
import { createPost, get } from './support.ts';

const MISSING = '0190a1b2-3c4d-7e5f-8a6b-7c8d9e0f1a2b';

for (const dialect of testDialects()) {
  describe(`tags: single-tag reads by several viewers at once [${dialect.name}]`, () => {
    let t: TestApp;
    let ana: TestUser;
    let ben: TestUser;
    let cy: TestUser;
    let shared: string;
    let hidden: string;
    let friendsOnly: string;
    let direct: string;
    let unused: string;

    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['all'], SEARCH_CACHE_ITEMS: 0 });
      ana = await t.createUser();
      ben = await t.createUser();
      cy = await t.createUser();
      // ben is ana's confirmed friend; cy is a stranger.
      await befriend(t, ana, ben);
      await createPost(t, ana, 'out in the open #zephyr');
      await createPost(t, ana, 'for friends #zephyr', { visibility: 'friends' });
      await createPost(t, ana, 'just mine #zephyr', { visibility: 'private' });
      await createPost(t, ana, 'plans #zephyrsecret', { visibility: 'private' });
      await createPost(t, ana, 'only for friends #zephyrfriends', { visibility: 'friends' });
      const tagOf = async (name: string) =>
        (await get(t, `/tags?filterby[name]=${name}`, ana.token)).data[0].uuid;
      shared = await tagOf('zephyr');
      hidden = await tagOf('zephyrsecret');
      friendsOnly = await tagOf('zephyrfriends');
      // A created tag on a message from ana to ben: public, its association seen by the message's two parties only.
      const message = await call(t, 'POST', '/messages', ana.token, { recipient_uuid: ben.uuid, body: 'hi' });
      direct = (
        await call(t, 'POST', '/tags/create', ana.token, { name: 'zephyrdirect', tag_type: 'hashtag' })
      ).uuid;
      await call(t, 'POST', '/tag-association', ana.token, {
        tag_uuid: direct,
        target_uuid: message.uuid,
        target_type: 'messages',
      });
      const created = await t.inject({
        method: 'POST',
        url: '/tags/create',
        token: cy.token,
        payload: { name: 'zephyrunused', tag_type: 'hashtag' },
      });
      assert.equal(created.statusCode, 201, created.body);
      unused = body(created).data.uuid;
    });
    after(async () => t?.close());

    it("reads of one turn each get their viewer's answer, the same as a read alone (one statement on PostgreSQL)", async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      const ctx = { ...t.ctx, db };
      const reads: [string, string | null][] = [
        [shared, ana.uuid],
        [shared, ben.uuid],
        [shared, cy.uuid],
        [shared, null],
        [hidden, ana.uuid],
        [hidden, ben.uuid],
        [hidden, null],
        [friendsOnly, ben.uuid],
        [friendsOnly, cy.uuid],
        [friendsOnly, null],
        [direct, ana.uuid],
        [direct, ben.uuid],
        [direct, cy.uuid],
        [unused, null],
        [MISSING, ana.uuid],
        // The same read twice in the turn.
        [shared, ben.uuid],
      ];
      const together = await Promise.all(
        reads.map(([uuid, viewer]) => findVisibleTag(ctx, uuid, viewer, 100)),
      );
      assert.equal(nodes.length, dialect.name === 'postgres' ? 1 : reads.length);
      const counts = together.map((found) => found?.associations.length);
      assert.deepEqual(counts, [
        3,
        2,
        1,
        1,
        1,
        undefined,
        undefined,
        1,
        undefined,
        undefined,
        1,
        1,
        0,
        0,
        undefined,
        2,
      ]);
      for (const [i, [uuid, viewer]] of reads.entries()) {
        const alone = await findVisibleTagWithAssociations(t.ctx.db, t.ctx.dialect, uuid, viewer, 100);
        assert.deepEqual(together[i], alone, `read ${i}`);
      }
      // A later turn reads again.
      assert.equal(await findVisibleTag(ctx, hidden, cy.uuid, 100), undefined);
      assert.equal(nodes.length, dialect.name === 'postgres' ? 2 : reads.length + 1);
    });

    it('PostgreSQL sends the reads as arrays: one statement text whatever their number', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      const ctx = { ...t.ctx, db };
      await findVisibleTag(ctx, shared, ana.uuid, 100);
      await Promise.all([findVisibleTag(ctx, shared, ben.uuid, 100), findVisibleTag(ctx, hidden, null, 100)]);
      const [one, two] = nodes.map((node) => db.getExecutor().compileQuery(node, createQueryId()));
      assert.ok(one?.sql.startsWith('select /* prepared */'), 'prepared by name');
      assert.equal(one?.sql, two?.sql);
    });

    // Over HTTP the requests may or may not share a turn (the test above holds one); either way each gets its own.
    it('concurrent requests by different callers each get their own tag, hidden ones answering 404', async () => {
      const read = (uuid: string, token: string) =>
        t.inject({ method: 'GET', url: `/tags/${uuid}`, token, headers: { 'cache-control': 'no-cache' } });
      for (let round = 0; round < 3; round++) {
        const [own, friend, stranger, guest, ownHidden, strangerHidden] = await Promise.all([
          read(shared, ana.token),
          read(shared, ben.token),
          read(shared, cy.token),
          read(shared, t.guest),
          read(hidden, ana.token),
          read(hidden, cy.token),
        ]);
        assert.deepEqual(
          [own, friend, stranger, guest].map((res) => body(res).data.associations.length),
          [3, 2, 1, 1],
        );
        assert.equal(ownHidden.statusCode, 200);
        assert.equal(strangerHidden.statusCode, 404);
        assert.equal(body(strangerHidden).error.code, 'object_not_found');
      }
    });
  });
}
