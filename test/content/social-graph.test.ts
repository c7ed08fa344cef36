import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompiledQuery } from 'kysely';
import { parseListQuery } from '../../src/http/list-query.ts';
import { LIST_MAX_OFFSET } from '../../src/http/paging.ts';
import { connectionPageQuery } from '../../src/modules/connection/connection.repository.ts';
import { CONNECTION_WHITELIST } from '../../src/modules/connection/connection.schemas.ts';
import { updateNetwork } from '../../src/modules/network/network.service.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

const MISSING = '0190a000-0000-7000-8000-000000000000';

for (const dialect of testDialects()) {
  describe(`connections, networks and messages [${dialect.name}]`, () => {
    let t: TestApp;
    let a: TestUser;
    let b: TestUser;
    let c: TestUser;
    const confirmed: string[] = [];

    before(async () => {
      t = await startTestApp(dialect);
      a = await t.createUser();
      b = await t.createUser();
      c = await t.createUser();
      t.ctx.bus.on(['connectionConfirmed'], async (_trx, e) => {
        confirmed.push(`${e.actorUuid}:${e.data?.user_uuid}:${e.data?.target_user_uuid}`);
      });
    });
    after(async () => t?.close());

    const areFriends = async (x: string, y: string) =>
      (
        await t.ctx.db
          .selectFrom('friends')
          .selectAll()
          .where('user_uuid', '=', x)
          .where('friend_uuid', '=', y)
          .execute()
      ).length === 1;

    it('befriends: request, forged confirm refused, confirm by the addressee', async () => {
      const self = await t.inject({
        method: 'POST',
        url: '/connections',
        token: a.token,
        payload: { user_uuid: a.uuid },
      });
      assert.equal(self.statusCode, 400);
      const nobody = await t.inject({
        method: 'POST',
        url: '/connections',
        token: a.token,
        payload: { user_uuid: MISSING },
      });
      assert.equal(nobody.statusCode, 404);
      assert.equal(body(nobody).error.code, 'object_not_found');
      const guest = await t.inject({
        method: 'POST',
        url: '/connections',
        token: t.guest,
        payload: { user_uuid: b.uuid },
      });
      assert.equal(guest.statusCode, 403);
      const extra = await t.inject({
        method: 'POST',
        url: '/connections',
        token: a.token,
        payload: { user_uuid: b.uuid, status: 'confirmed' },
      });
      assert.equal(extra.statusCode, 400);

      const req = await t.inject({
        method: 'POST',
        url: '/connections',
        token: a.token,
        payload: { user_uuid: b.uuid },
      });
      assert.equal(req.statusCode, 201);
      const conn = body(req).data;
      assert.deepEqual(
        {
          type: conn.type,
          user_uuid: conn.user_uuid,
          target_user_uuid: conn.target_user_uuid,
          status: conn.status,
        },
        { type: 'connection', user_uuid: a.uuid, target_user_uuid: b.uuid, status: 'pending' },
      );
      // One connection per pair, whichever side asks.
      for (const [token, user_uuid] of [
        [a.token, b.uuid],
        [b.token, a.uuid],
      ] as const) {
        const dup = await t.inject({ method: 'POST', url: '/connections', token, payload: { user_uuid } });
        assert.equal(dup.statusCode, 409);
        assert.equal(body(dup).error.code, 'conflict');
      }
      // The requester (or a third user) cannot confirm it.
      for (const token of [a.token, c.token]) {
        const forged = await t.inject({ method: 'POST', url: `/connections/${conn.uuid}/confirm`, token });
        assert.equal(forged.statusCode, 404);
        assert.equal(body(forged).error.code, 'object_not_found');
      }
      assert.equal(await areFriends(a.uuid, b.uuid), false);
      assert.equal(confirmed.length, 0);
      const ok = await t.inject({ method: 'POST', url: `/connections/${conn.uuid}/confirm`, token: b.token });
      assert.equal(ok.statusCode, 200);
      assert.equal(body(ok).data.status, 'confirmed');
      assert.equal(await areFriends(a.uuid, b.uuid), true);
      assert.equal(await areFriends(b.uuid, a.uuid), true);
      assert.deepEqual(confirmed, [`${b.uuid}:${a.uuid}:${b.uuid}`]);
      // Confirming again changes nothing and emits nothing.
      const again = await t.inject({
        method: 'POST',
        url: `/connections/${conn.uuid}/confirm`,
        token: b.token,
      });
      assert.equal(again.statusCode, 200);
      assert.equal(confirmed.length, 1);
    });

    it('lists the caller’s connections with paging, a status filter and an exact total', async () => {
      const pending = await t.inject({
        method: 'POST',
        url: '/connections',
        token: c.token,
        payload: { user_uuid: b.uuid },
      });
      assert.equal(pending.statusCode, 201);
      const all = await t.inject({ method: 'GET', url: '/connections', token: b.token });
      assert.equal(all.statusCode, 200);
      assert.equal(body(all).count.total, 2);
      assert.equal(body(all).data.length, 2);
      const conf = await t.inject({
        method: 'GET',
        url: '/connections?filterby[status][eq]=confirmed',
        token: b.token,
      });
      assert.equal(body(conf).count.total, 1);
      assert.equal(body(conf).data[0].status, 'confirmed');
      const page = await t.inject({ method: 'GET', url: '/connections?limit=1&offset=1', token: b.token });
      assert.deepEqual(body(page).count, { offset: 1, limit: 1, total: 2 });
      assert.equal(body(page).data.length, 1);
      const forA = await t.inject({ method: 'GET', url: '/connections', token: a.token });
      assert.equal(body(forA).count.total, 1);
      // Sorted on either side's rows: b is the target of both, a the sender of one.
      const byStatus = body(
        await t.inject({ method: 'GET', url: '/connections?sortby[status]=desc', token: b.token }),
      );
      assert.deepEqual(
        byStatus.data.map((k: { status: string; user_uuid: string }) => [k.status, k.user_uuid]),
        [
          ['pending', c.uuid],
          ['confirmed', a.uuid],
        ],
      );
      assert.deepEqual(Object.keys(byStatus.data[0]).sort(), [
        'created_at',
        'status',
        'target_user_uuid',
        'type',
        'updated_at',
        'user_uuid',
        'uuid',
      ]);
      if (dialect.name === 'sqlite') {
        // Migration 0019-connection-cover: both sides of the list are read from indexes alone.
        const page = connectionPageQuery(
          t.ctx.db,
          b.uuid,
          parseListQuery({ sortby: { status: 'desc' } }, CONNECTION_WHITELIST, LIST_MAX_OFFSET),
        ).compile();
        const plan = await t.ctx.db.executeQuery<{ detail: string }>(
          CompiledQuery.raw(`explain query plan ${page.sql}`, [...page.parameters]),
        );
        const details = plan.rows.map((r) => r.detail).join('\n');
        assert.match(details, /COVERING INDEX connections_user_cover/);
        assert.match(details, /COVERING INDEX connections_target_cover/);
      }
      for (const url of [
        '/connections?filterby[status][eq]=maybe',
        '/connections?filterby[secret][eq]=x',
        '/connections?limit=1000',
        '/connections?sort=uuid',
      ]) {
        const bad = await t.inject({ method: 'GET', url, token: b.token });
        assert.equal(bad.statusCode, 400, url);
        assert.equal(body(bad).error.code, 'invalid_request');
      }
      const guest = await t.inject({ method: 'GET', url: '/connections', token: t.guest });
      assert.equal(guest.statusCode, 403);
    });

    it('deletes a connection from either side; strangers get 404', async () => {
      const list = body(await t.inject({ method: 'GET', url: '/connections', token: a.token })).data;
      const conn = list[0];
      const deleted: string[] = [];
      t.ctx.bus.on(['connectionDeleted'], async (_trx, e) => {
        deleted.push(e.targetUuid);
      });
      const stranger = await t.inject({
        method: 'POST',
        url: `/connections/${conn.uuid}/delete`,
        token: c.token,
      });
      assert.equal(stranger.statusCode, 404);
      const res = await t.inject({ method: 'POST', url: `/connections/${conn.uuid}/delete`, token: b.token });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(Object.keys(body(res)).sort(), ['status', 'timestamp']);
      assert.deepEqual(deleted, [conn.uuid]);
      assert.equal(await areFriends(a.uuid, b.uuid), false);
      assert.equal(await areFriends(b.uuid, a.uuid), false);
      // A pending request withdrawn by its requester emits nothing.
      const pending = body(await t.inject({ method: 'GET', url: '/connections', token: c.token })).data[0];
      const withdraw = await t.inject({
        method: 'POST',
        url: `/connections/${pending.uuid}/delete`,
        token: c.token,
      });
      assert.equal(withdraw.statusCode, 200);
      assert.deepEqual(deleted, [conn.uuid]);
    });

    it('takes concurrent confirms, then concurrent deletes, of one connection once each', async () => {
      // PostgreSQL: both confirms read the request pending, and the second's friend rows broke the primary key (500).
      const d = await t.createUser();
      const e = await t.createUser();
      const made = await t.inject({
        method: 'POST',
        url: '/connections',
        token: d.token,
        payload: { user_uuid: e.uuid },
      });
      const uuid = body(made).data.uuid as string;
      const events = confirmed.length;
      const send = (action: string, user: TestUser) =>
        t.inject({ method: 'POST', url: `/connections/${uuid}/${action}`, token: user.token });
      const confirms = await Promise.all(Array.from({ length: 4 }, () => send('confirm', e)));
      assert.deepEqual(
        confirms.map((r) => [r.statusCode, body(r).data?.status]),
        Array.from({ length: 4 }, () => [200, 'confirmed']),
      );
      assert.equal(confirmed.length - events, 1, 'one connectionConfirmed event');
      assert.equal(await areFriends(d.uuid, e.uuid), true);
      assert.equal(await areFriends(e.uuid, d.uuid), true);
      const karma = await t.ctx.db
        .selectFrom('karma')
        .select(['user_uuid'])
        .where('event', '=', 'connectionConfirmed')
        .where('user_uuid', 'in', [d.uuid, e.uuid])
        .execute();
      assert.equal(karma.length, 2, 'one karma record for each side');
      const deletes = await Promise.all(Array.from({ length: 4 }, (_, i) => send('delete', i % 2 ? d : e)));
      assert.deepEqual(deletes.map((r) => r.statusCode).sort(), [200, 404, 404, 404]);
      assert.ok(deletes.every((r) => r.statusCode === 200 || body(r).error.code === 'object_not_found'));
      assert.equal(await areFriends(d.uuid, e.uuid), false);
      assert.equal(await areFriends(e.uuid, d.uuid), false);
      const compensations = await t.ctx.db
        .selectFrom('karma')
        .select(['user_uuid'])
        .where('event', '=', 'connectionDeleted')
        .where('user_uuid', 'in', [d.uuid, e.uuid])
        .execute();
      assert.equal(compensations.length, 2, 'the points taken back once from each side');
    });

    it('takes back the karma of a friendship confirmed while its requester deletes their account', async () => {
      // PostgreSQL: the deletion read the requests pending, so it undid no friendship, and removed rows a confirm had
      // just set to confirmed: the addressee kept points for friendships that no longer exist.
      const addressee = await t.createUser();
      const requesters = await Promise.all(Array.from({ length: 6 }, () => t.createUser()));
      const requests: string[] = [];
      for (const r of requesters) {
        const made = await t.inject({
          method: 'POST',
          url: '/connections',
          token: r.token,
          payload: { user_uuid: addressee.uuid },
        });
        requests.push(body(made).data.uuid as string);
      }
      const answers = await Promise.all(
        requesters.flatMap((r, i) => [
          t.inject({ method: 'POST', url: `/connections/${requests[i]}/confirm`, token: addressee.token }),
          t.inject({ method: 'POST', url: `/users/${r.uuid}/delete`, token: r.token }),
        ]),
      );
      assert.ok(
        answers.every((a) => a.statusCode === 200 || a.statusCode === 404),
        answers.map((a) => a.statusCode).join(),
      );
      const records = await t.ctx.db
        .selectFrom('karma')
        .select(['karma_type', 'points'])
        .where('user_uuid', '=', addressee.uuid)
        .where('event', 'in', ['connectionConfirmed', 'connectionDeleted'])
        .execute();
      const net = records.reduce((sum, k) => sum + (k.karma_type === 'add' ? k.points : -k.points), 0);
      assert.equal(net, 0, 'no points left from friendships that are gone');
      const me = body(await t.inject({ method: 'GET', url: '/me', token: addressee.token })).data;
      assert.equal(me.karma, 0);
      const friends = await t.ctx.db
        .selectFrom('friends')
        .selectAll()
        .where('user_uuid', '=', addressee.uuid)
        .execute();
      assert.equal(friends.length, 0);
    });

    it('leaves no member of a network deleted while users join it', async () => {
      // PostgreSQL: the delete cleared the members it saw; joins committing meanwhile kept a deleted network.
      const owner = await t.createUser();
      const joiners = await Promise.all(Array.from({ length: 6 }, () => t.createUser()));
      for (let round = 0; round < 3; round++) {
        const created = await t.inject({
          method: 'POST',
          url: '/networks',
          token: owner.token,
          payload: { name: `Race ${round}` },
        });
        const uuid = body(created).data.uuid as string;
        const answers = await Promise.all([
          t.inject({ method: 'POST', url: `/networks/${uuid}/delete`, token: owner.token }),
          ...joiners.map((j) => t.inject({ method: 'POST', url: `/networks/${uuid}/join`, token: j.token })),
        ]);
        assert.equal(answers[0]?.statusCode, 200);
        assert.ok(answers.every((a) => a.statusCode === 200 || a.statusCode === 404));
        const members = await t.ctx.db
          .selectFrom('users')
          .select('uuid')
          .where('network_uuid', '=', uuid)
          .execute();
        assert.deepEqual(members, [], `round ${round}: members of a deleted network`);
      }
    });

    it('a network update answers the row as stored, with an edit of the other field committed meanwhile', {
      skip: dialect.name !== 'postgres' && 'SQLite runs one write at a time',
    }, async () => {
      const net = body(
        await t.inject({
          method: 'POST',
          url: '/networks',
          token: a.token,
          payload: { name: 'Before', description: 'D0' },
        }),
      ).data;
      // Whatever the update reads of the network before it writes, another edit commits right after that read.
      let armed = true;
      const reads = new Set<unknown>();
      const db = t.ctx.db.withPlugin({
        transformQuery: (args) => {
          if (args.node.kind === 'SelectQueryNode') reads.add(args.queryId);
          return args.node;
        },
        transformResult: async (args) => {
          if (
            armed &&
            reads.has(args.queryId) &&
            JSON.stringify(args.result.rows[0] ?? {}).includes(net.uuid)
          ) {
            armed = false;
            await t.ctx.db
              .updateTable('networks')
              .set({ description: 'D1' })
              .where('uuid', '=', net.uuid)
              .execute();
          }
          return args.result;
        },
      });
      const answer = await updateNetwork({ ...t.ctx, db }, net.uuid, { name: 'After' });
      const stored = body(
        await t.inject({ method: 'GET', url: `/networks/${net.uuid}`, token: a.token }),
      ).data;
      assert.deepEqual(answer, stored);
      await t.inject({ method: 'POST', url: `/networks/${net.uuid}/delete`, token: a.token });
    });

    it('networks: create (201), read, update and delete by the owner only, join, members cleared', async () => {
      const created = await t.inject({
        method: 'POST',
        url: '/networks',
        token: a.token,
        payload: { name: 'Climbers', description: 'Rocks', payment_id: 9007199254740991 },
      });
      assert.equal(created.statusCode, 201, created.body);
      const net = body(created).data;
      assert.deepEqual(Object.keys(net).sort(), [
        'created_at',
        'description',
        'name',
        'payment_id',
        'type',
        'updated_at',
        'user_uuid',
        'uuid',
      ]);
      assert.equal(net.payment_id, 9007199254740991);
      assert.equal(net.user_uuid, a.uuid);
      const plain = await t.inject({
        method: 'POST',
        url: '/networks',
        token: b.token,
        payload: { name: 'Plain' },
      });
      assert.equal(body(plain).data.payment_id, null);
      for (const payload of [
        { name: '' },
        { name: 'x'.repeat(101) },
        { name: 'x', payment_id: -1 },
        { name: 'x', payment_id: 1.5 },
        { name: 'x', payment_id: 9007199254740992 },
        { name: 'x', user_uuid: b.uuid },
        { description: 'no name' },
      ]) {
        const bad = await t.inject({ method: 'POST', url: '/networks', token: a.token, payload });
        assert.equal(bad.statusCode, 400, JSON.stringify(payload));
      }
      const guestRead = await t.inject({ method: 'GET', url: `/networks/${net.uuid}`, token: t.guest });
      assert.equal(guestRead.statusCode, 200);
      assert.equal(body(guestRead).data.name, 'Climbers');
      const missing = await t.inject({ method: 'GET', url: `/networks/${MISSING}`, token: t.guest });
      assert.equal(missing.statusCode, 404);

      for (const token of [b.token, c.token]) {
        const upd = await t.inject({
          method: 'POST',
          url: `/networks/${net.uuid}/update`,
          token,
          payload: { name: 'Mine' },
        });
        assert.equal(upd.statusCode, 404);
        const del = await t.inject({ method: 'POST', url: `/networks/${net.uuid}/delete`, token });
        assert.equal(del.statusCode, 404);
      }
      const upd = await t.inject({
        method: 'POST',
        url: `/networks/${net.uuid}/update`,
        token: a.token,
        payload: { description: 'Rocks and ropes' },
      });
      assert.equal(upd.statusCode, 200);
      assert.equal(body(upd).data.description, 'Rocks and ropes');
      assert.equal(body(upd).data.name, 'Climbers');
      const readOnly = await t.inject({
        method: 'POST',
        url: `/networks/${net.uuid}/update`,
        token: a.token,
        payload: { payment_id: 5 },
      });
      assert.equal(readOnly.statusCode, 400);

      const join = await t.inject({ method: 'POST', url: `/networks/${net.uuid}/join`, token: b.token });
      assert.equal(join.statusCode, 200);
      const user = body(join).data;
      assert.equal(user.type, 'user');
      assert.equal(user.uuid, b.uuid);
      assert.equal(user.network_uuid, net.uuid);
      assert.equal(user.email, undefined);
      const guestJoin = await t.inject({ method: 'POST', url: `/networks/${net.uuid}/join`, token: t.guest });
      assert.equal(guestJoin.statusCode, 403);
      const joinMissing = await t.inject({
        method: 'POST',
        url: `/networks/${MISSING}/join`,
        token: c.token,
      });
      assert.equal(joinMissing.statusCode, 404);
      await t.inject({ method: 'POST', url: `/networks/${net.uuid}/join`, token: c.token });

      const del = await t.inject({ method: 'POST', url: `/networks/${net.uuid}/delete`, token: a.token });
      assert.equal(del.statusCode, 200);
      const members = await t.ctx.db
        .selectFrom('users')
        .select('uuid')
        .where('network_uuid', '=', net.uuid)
        .execute();
      assert.equal(members.length, 0);
      const gone = await t.inject({ method: 'GET', url: `/networks/${net.uuid}`, token: a.token });
      assert.equal(gone.statusCode, 404);
    });

    it('messages: sorted and filtered by whitelisted properties, so a page past the offset cap is reachable', async () => {
      const [d, e] = [await t.createUser('dora'), await t.createUser('emil')];
      for (const [from, to, text] of [
        [d, e, 'one'],
        [d, e, 'two'],
        [e, d, 'back'],
        [d, e, 'three'],
      ] as const) {
        await t.inject({
          method: 'POST',
          url: '/messages',
          token: from.token,
          payload: { recipient_uuid: to.uuid, body: text },
        });
        // Apart by a few milliseconds, so a created_at bound falls between two of them.
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
      const list = async (query: string) => {
        const res = await t.inject({ method: 'GET', url: `/messages?${query}`, token: e.token });
        assert.equal(res.statusCode, 200, res.body);
        const page = body(res);
        return { bodies: page.data.map((m: { body: string }) => m.body), total: page.count.total };
      };
      assert.deepEqual(await list(''), { bodies: ['three', 'back', 'two', 'one'], total: 4 });
      assert.deepEqual(await list('sortby[created_at]=asc'), {
        bodies: ['one', 'two', 'back', 'three'],
        total: 4,
      });
      assert.deepEqual(await list(`filterby[user_uuid][eq]=${d.uuid}&limit=2`), {
        bodies: ['three', 'two'],
        total: 3,
      });
      assert.deepEqual(await list(`filterby[recipient_uuid][eq]=${d.uuid}`), { bodies: ['back'], total: 1 });
      const all = body(
        await t.inject({ method: 'GET', url: '/messages?sortby[created_at]=asc', token: e.token }),
      );
      const second = all.data[1].created_at as string;
      assert.deepEqual(
        await list(`filterby[created_at][gt]=${encodeURIComponent(second)}&sortby[created_at]=asc`),
        {
          bodies: ['back', 'three'],
          total: 2,
        },
      );
      // Another party's messages stay out whatever the filter names.
      const other = await t.inject({
        method: 'GET',
        url: `/messages?filterby[user_uuid][eq]=${d.uuid}`,
        token: a.token,
      });
      assert.equal(body(other).count.total, 0);
      for (const query of ['sortby[body]=asc', 'filterby[body][eq]=one', 'filterby[user_uuid][eq]=nope']) {
        const res = await t.inject({ method: 'GET', url: `/messages?${query}`, token: e.token });
        assert.equal(res.statusCode, 400, query);
        assert.equal(body(res).error.code, 'invalid_request', query);
      }
    });

    it('messages: only sender and recipient see them; only the sender deletes', async () => {
      const self = await t.inject({
        method: 'POST',
        url: '/messages',
        token: a.token,
        payload: { recipient_uuid: a.uuid, body: 'me' },
      });
      assert.equal(self.statusCode, 400);
      const nobody = await t.inject({
        method: 'POST',
        url: '/messages',
        token: a.token,
        payload: { recipient_uuid: MISSING, body: 'hi' },
      });
      assert.equal(nobody.statusCode, 404);
      for (const payload of [
        { recipient_uuid: b.uuid, body: '' },
        { recipient_uuid: b.uuid, body: 'x'.repeat(5001) },
        { recipient_uuid: b.uuid, body: 'x', user_uuid: c.uuid },
        { body: 'x' },
      ]) {
        const bad = await t.inject({ method: 'POST', url: '/messages', token: a.token, payload });
        assert.equal(bad.statusCode, 400);
      }
      const guest = await t.inject({
        method: 'POST',
        url: '/messages',
        token: t.guest,
        payload: { recipient_uuid: b.uuid, body: 'hi' },
      });
      assert.equal(guest.statusCode, 403);

      const sent = await t.inject({
        method: 'POST',
        url: '/messages',
        token: a.token,
        payload: { recipient_uuid: b.uuid, body: 'secret', language: 'it' },
      });
      assert.equal(sent.statusCode, 201);
      const m = body(sent).data;
      assert.deepEqual(
        { type: m.type, user_uuid: m.user_uuid, recipient_uuid: m.recipient_uuid, language: m.language },
        { type: 'messages', user_uuid: a.uuid, recipient_uuid: b.uuid, language: 'it' },
      );
      await t.inject({
        method: 'POST',
        url: '/messages',
        token: b.token,
        payload: { recipient_uuid: a.uuid, body: 'reply' },
      });

      for (const [token, status] of [
        [a.token, 200],
        [b.token, 200],
        [c.token, 404],
      ] as const) {
        const res = await t.inject({ method: 'GET', url: `/messages/${m.uuid}`, token });
        assert.equal(res.statusCode, status);
      }
      const guestRead = await t.inject({ method: 'GET', url: `/messages/${m.uuid}`, token: t.guest });
      assert.equal(guestRead.statusCode, 403);

      const listA = body(await t.inject({ method: 'GET', url: '/messages', token: a.token }));
      assert.equal(listA.count.total, 2);
      assert.equal(listA.data[0].body, 'reply');
      const listC = body(await t.inject({ method: 'GET', url: '/messages', token: c.token }));
      assert.equal(listC.count.total, 0);
      assert.deepEqual(listC.data, []);
      const paged = body(await t.inject({ method: 'GET', url: '/messages?page=2&limit=1', token: b.token }));
      assert.deepEqual(paged.count, { offset: 1, limit: 1, total: 2 });
      const both = await t.inject({ method: 'GET', url: '/messages?page=1&offset=0', token: b.token });
      assert.equal(both.statusCode, 400);

      const byRecipient = await t.inject({
        method: 'POST',
        url: `/messages/${m.uuid}/delete`,
        token: b.token,
      });
      assert.equal(byRecipient.statusCode, 404);
      const byStranger = await t.inject({
        method: 'POST',
        url: `/messages/${m.uuid}/delete`,
        token: c.token,
      });
      assert.equal(byStranger.statusCode, 404);
      const bySender = await t.inject({ method: 'POST', url: `/messages/${m.uuid}/delete`, token: a.token });
      assert.equal(bySender.statusCode, 200);
      const gone = await t.inject({ method: 'GET', url: `/messages/${m.uuid}`, token: b.token });
      assert.equal(gone.statusCode, 404);
    });
  });
}
