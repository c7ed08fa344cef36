import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { uuidv7 } from '../../src/db/time.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { KarmaDriver, ledger, ledgerSum, storedKarma } from './support.ts';

const FIELDS = [
  'created_at',
  'event',
  'karma_type',
  'points',
  'target_type',
  'target_uuid',
  'type',
  'updated_at',
  'user_uuid',
  'uuid',
];

/** An error body without what differs per answer (time, request id). */
function errorShape(res: { statusCode: number; body: string }) {
  const b = JSON.parse(res.body);
  return { status: res.statusCode, code: b.error.code, message: b.error.message, details: b.error.details };
}

for (const dialect of testDialects()) {
  describe(`karma record operations [${dialect.name}]`, () => {
    let t: TestApp;
    let d: KarmaDriver;
    let alice: TestUser;
    let bob: TestUser;
    let post: string;
    let record: string;

    before(async () => {
      t = await startTestApp(dialect);
      d = new KarmaDriver(t);
      alice = await t.createUser();
      bob = await t.createUser();
      post = await d.createPost(alice);
      const rows = await ledger(t, alice.uuid);
      record = rows[0]?.uuid as string;
    });
    after(async () => t?.close());

    const valid = () => ({
      event: 'postCreated',
      target_uuid: post,
      target_type: 'post',
      karma_type: 'add',
      points: 2,
    });

    it('GET /karma/{uuid}: the owner reads the record with exactly the public fields', async () => {
      const res = await t.inject({ method: 'GET', url: `/karma/${record}`, token: alice.token });
      assert.equal(res.statusCode, 200);
      const b = body(res);
      assert.equal(b.status, 'OK');
      assert.equal(typeof b.timestamp, 'number');
      assert.deepEqual(Object.keys(b.data).sort(), FIELDS);
      assert.deepEqual(
        {
          uuid: b.data.uuid,
          type: b.data.type,
          user_uuid: b.data.user_uuid,
          event: b.data.event,
          target_uuid: b.data.target_uuid,
          target_type: b.data.target_type,
          karma_type: b.data.karma_type,
          points: b.data.points,
        },
        {
          uuid: record,
          type: 'karma',
          user_uuid: alice.uuid,
          event: 'postCreated',
          target_uuid: post,
          target_type: 'post',
          karma_type: 'add',
          points: 2,
        },
      );
      assert.match(b.data.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    });

    it('a foreign record and a missing one answer the same 404 object_not_found on all three operations', async () => {
      const missing = uuidv7();
      const ops = [
        (u: string) => ({ method: 'GET' as const, url: `/karma/${u}` }),
        (u: string) => ({ method: 'POST' as const, url: `/karma/${u}/update`, payload: valid() }),
        (u: string) => ({ method: 'POST' as const, url: `/karma/${u}/delete` }),
      ];
      for (const op of ops) {
        const foreign = await t.inject({ ...op(record), token: bob.token });
        const absent = await t.inject({ ...op(missing), token: bob.token });
        const garbage = await t.inject({ ...op('not-a-uuid'), token: bob.token });
        assert.equal(foreign.statusCode, 404, foreign.body);
        assert.equal(errorShape(foreign).code, 'object_not_found');
        assert.deepEqual(errorShape(foreign), errorShape(absent));
        assert.deepEqual(errorShape(foreign), errorShape(garbage));
      }
      assert.equal(await storedKarma(t, alice.uuid), 2, 'nothing changed');
      assert.equal((await ledger(t, alice.uuid)).length, 1);
    });

    it('uncached reads sent at once each answer their own caller: a record to its owner, 404 to anyone else', async () => {
      // On PostgreSQL the reads of one turn go to the database as one statement (src/db/turn-batch.ts).
      const bobPost = await d.createPost(bob);
      const bobs = (await ledger(t, bob.uuid)).find((r) => r.target_uuid === bobPost)?.uuid as string;
      const read = (uuid: string, user: TestUser) =>
        t.inject({
          method: 'GET',
          url: `/karma/${encodeURIComponent(uuid)}`,
          token: user.token,
          headers: { 'cache-control': 'no-cache' },
        });
      const missing = await read(uuidv7(), bob);
      const asked: [string, TestUser, string | null][] = [
        [record, alice, record],
        [bobs, bob, bobs],
        [record, bob, null],
        [bobs, alice, null],
        [record.toUpperCase(), alice, record],
        [bobs.toUpperCase(), alice, null],
        // Array and list syntax inside a key stays part of the key.
        [`${uuidv7()}","${record}`, alice, null],
        [`{${record}}`, alice, null],
        [`${record},${bobs}`, bob, null],
      ];
      const answers = await Promise.all(asked.map(([uuid, user]) => read(uuid, user)));
      answers.forEach((res, i) => {
        const [uuid, , found] = asked[i] as [string, TestUser, string | null];
        if (found === null) {
          assert.deepEqual(errorShape(res), errorShape(missing), `${uuid}: ${res.body}`);
        } else {
          assert.equal(res.statusCode, 200, res.body);
          assert.equal(body(res).data.uuid, found);
        }
      });
    });

    it('a guest gets 403 login_required and no token 401 on all three operations', async () => {
      const ops = [
        { method: 'GET' as const, url: `/karma/${record}` },
        { method: 'POST' as const, url: `/karma/${record}/update`, payload: valid() },
        { method: 'POST' as const, url: `/karma/${record}/delete` },
        { method: 'GET' as const, url: '/karma' },
      ];
      for (const op of ops) {
        const guest = await t.inject({ ...op, token: t.guest });
        assert.equal(guest.statusCode, 403, `${op.url}: ${guest.body}`);
        assert.equal(body(guest).error.code, 'login_required');
        const anonymous = await t.inject(op);
        assert.equal(anonymous.statusCode, 401);
      }
      assert.equal(await storedKarma(t, alice.uuid), 2);
      assert.equal((await ledger(t, alice.uuid)).length, 1);
    });

    it('GET /karma/{uuid} never answers from before a write: update, then delete, are seen at once', async () => {
      const extra = await d.createPost(alice);
      const mine = (await ledger(t, alice.uuid)).find((r) => r.target_uuid === extra)?.uuid as string;
      const read = () => t.inject({ method: 'GET', url: `/karma/${mine}`, token: alice.token });
      assert.equal(body(await read()).data.points, 2);
      assert.equal(body(await read()).data.points, 2, 'the same answer again (from the read cache)');
      const updated = await t.inject({
        method: 'POST',
        url: `/karma/${mine}/update`,
        token: alice.token,
        payload: { ...valid(), target_uuid: extra, points: 1 },
      });
      assert.equal(updated.statusCode, 200, updated.body);
      // Someone asking first, after the write, for another spelling of the uuid changes nothing for the owner.
      const upper = await t.inject({ method: 'GET', url: `/karma/${mine.toUpperCase()}`, token: bob.token });
      assert.equal(upper.statusCode, 404);
      assert.equal(body(await read()).data.points, 1);
      const deleted = await t.inject({ method: 'POST', url: `/karma/${mine}/delete`, token: alice.token });
      assert.equal(deleted.statusCode, 200, deleted.body);
      assert.equal((await read()).statusCode, 404);
    });

    it('update refuses bad input with 400 and changes nothing', async () => {
      const network = await d.createNetwork(bob);
      const stored = body(
        await t.inject({ method: 'GET', url: `/karma/${record}`, token: alice.token }),
      ).data;
      const cases: [string, Record<string, unknown>, string][] = [
        ['mints points', { ...valid(), points: 3 }, 'points'],
        ['mints through another rule', { ...valid(), event: 'commentCreated', points: 2 }, 'points'],
        ['negative points', { ...valid(), points: -1 }, 'points'],
        ['fractional points', { ...valid(), points: 1.5 }, 'points'],
        ['text points', { ...valid(), points: 'two' }, 'points'],
        ['unknown event', { ...valid(), event: 'postLiked' }, 'event'],
        ['unknown target type', { ...valid(), target_type: 'tag' }, 'target_type'],
        ['target that does not exist', { ...valid(), target_uuid: uuidv7() }, 'target_uuid'],
        ['target of another kind', { ...valid(), target_type: 'comment' }, 'target_uuid'],
        ['malformed target uuid', { ...valid(), target_uuid: 'abc' }, 'target_uuid'],
        ['bad karma_type', { ...valid(), karma_type: 'multiply' }, 'karma_type'],
        [
          'a missing field',
          { event: 'postCreated', target_uuid: post, target_type: 'post', karma_type: 'add' },
          'points',
        ],
        ['an unknown field', { ...valid(), user_uuid: bob.uuid }, 'user_uuid'],
      ];
      for (const [what, payload, field] of cases) {
        const res = await t.inject({
          method: 'POST',
          url: `/karma/${record}/update`,
          token: alice.token,
          payload,
        });
        assert.equal(res.statusCode, 400, `${what}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request');
        assert.ok(
          (body(res).error.details as { field: string }[]).some((x) => x.field === field),
          `${what}: ${res.body}`,
        );
      }
      // networkCreated allows 10 points, but the network (bob's) exists: editing it in is allowed only up to 10.
      const tooMuch = await t.inject({
        method: 'POST',
        url: `/karma/${record}/update`,
        token: alice.token,
        payload: {
          ...valid(),
          event: 'networkCreated',
          target_type: 'network',
          target_uuid: network,
          points: 11,
        },
      });
      assert.equal(tooMuch.statusCode, 400);
      const get = await t.inject({
        method: 'GET',
        url: `/karma/${record}`,
        token: alice.token,
        headers: { 'cache-control': 'no-cache' },
      });
      assert.equal(body(get).data.points, 2);
      assert.equal(body(get).data.event, 'postCreated');
      assert.deepEqual(body(get).data, stored, 'every field as before, updated_at included');
      assert.equal(await storedKarma(t, alice.uuid), 2);
    });

    it("update keeps a record's own target even when it is gone; a move needs an existing one", async () => {
      const carol = await t.createUser();
      const gone = await d.createPost(carol);
      await d.deletePost(carol, gone);
      const created = (await ledger(t, carol.uuid)).find((r) => r.event === 'postCreated');
      assert.ok(created, 'the post paid a record');
      const before = await storedKarma(t, carol.uuid);
      const lower = (target_uuid: string) =>
        t.inject({
          method: 'POST',
          url: `/karma/${created.uuid}/update`,
          token: carol.token,
          payload: { ...valid(), target_uuid, points: 0 },
        });
      const moved = await lower(uuidv7());
      assert.equal(moved.statusCode, 400, moved.body);
      assert.equal(body(moved).error.details[0].field, 'target_uuid');
      const kept = await lower(gone.toUpperCase());
      assert.equal(kept.statusCode, 200, kept.body);
      assert.equal(body(kept).data.target_uuid, gone);
      assert.equal(body(kept).data.points, 0);
      assert.equal(await storedKarma(t, carol.uuid), before - Number(created.points));
      assert.equal(await ledgerSum(t, carol.uuid), await storedKarma(t, carol.uuid));
    });

    it('update by the owner returns the record and moves users.karma by the difference', async () => {
      const before = body(
        await t.inject({ method: 'GET', url: `/karma/${record}`, token: alice.token }),
      ).data;
      const res = await t.inject({
        method: 'POST',
        url: `/karma/${record}/update`,
        token: alice.token,
        payload: { ...valid(), points: 1 },
      });
      assert.equal(res.statusCode, 200, res.body);
      const b = body(res);
      assert.deepEqual(Object.keys(b.data).sort(), FIELDS);
      assert.equal(b.data.points, 1);
      assert.equal(b.data.uuid, record);
      assert.equal(b.data.created_at, before.created_at);
      assert.ok(b.data.updated_at >= before.updated_at);
      assert.equal(await storedKarma(t, alice.uuid), 1);

      const sub = await t.inject({
        method: 'POST',
        url: `/karma/${record}/update`,
        token: alice.token,
        payload: { ...valid(), karma_type: 'subtract', points: 2 },
      });
      assert.equal(sub.statusCode, 200);
      assert.equal(body(sub).data.karma_type, 'subtract');
      assert.equal(await storedKarma(t, alice.uuid), -2);
      assert.equal(await ledgerSum(t, alice.uuid), -2);
    });

    it('update accepts a form-encoded body and may retarget within the rule', async () => {
      // A fresh record (postCreated, +2): retargeting it to a commentCreated of 1 point lowers its value.
      const u = await t.createUser();
      await d.createPost(u);
      const [rec] = await ledger(t, u.uuid);
      const comment = await d.createComment(bob, post);
      const form = new URLSearchParams({
        event: 'commentCreated',
        target_uuid: comment,
        target_type: 'comment',
        karma_type: 'add',
        points: '1',
      }).toString();
      const res = await t.inject({
        method: 'POST',
        url: `/karma/${rec?.uuid}/update`,
        token: u.token,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form,
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(body(res).data.event, 'commentCreated');
      assert.equal(body(res).data.target_uuid, comment);
      assert.equal(body(res).data.target_type, 'comment');
      assert.equal(body(res).data.points, 1);
      assert.equal(await storedKarma(t, u.uuid), 1);
    });

    it('update never raises a record: no minting through subtract→add or a richer event', async () => {
      const u = await t.createUser();
      const p = await d.createPost(u);
      const network = await d.createNetwork(bob);
      await d.deletePost(u, p);
      const rows = await ledger(t, u.uuid);
      const added = rows.find((r) => r.karma_type === 'add');
      const subtracted = rows.find((r) => r.karma_type === 'subtract');
      assert.equal(await storedKarma(t, u.uuid), 0);
      const attempts: [string | undefined, Record<string, unknown>][] = [
        // the compensating record (-2) turned into an add (+2): +4
        [
          subtracted?.uuid,
          { event: 'postDeleted', target_uuid: post, target_type: 'post', karma_type: 'add', points: 2 },
        ],
        // a postCreated record (+2) turned into a networkCreated record (+10): +8
        [
          added?.uuid,
          {
            event: 'networkCreated',
            target_uuid: network,
            target_type: 'network',
            karma_type: 'add',
            points: 10,
          },
        ],
      ];
      for (const [uuid, payload] of attempts) {
        const res = await t.inject({ method: 'POST', url: `/karma/${uuid}/update`, token: u.token, payload });
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(body(res).error.code, 'invalid_request');
        assert.ok((body(res).error.details as { field: string }[]).some((x) => x.field === 'points'));
      }
      assert.equal(await storedKarma(t, u.uuid), 0, 'nothing minted');
      assert.equal(await ledgerSum(t, u.uuid), 0);
      // Keeping the value (retarget only) and lowering it are still allowed.
      const same = await t.inject({
        method: 'POST',
        url: `/karma/${subtracted?.uuid}/update`,
        token: u.token,
        payload: {
          event: 'postDeleted',
          target_uuid: post,
          target_type: 'post',
          karma_type: 'subtract',
          points: 2,
        },
      });
      assert.equal(same.statusCode, 200, same.body);
      assert.equal(await storedKarma(t, u.uuid), 0);
    });

    it('delete by the owner answers status and timestamp only and takes the points out of the total', async () => {
      const u = await t.createUser();
      await d.createNetwork(u);
      const [rec] = await ledger(t, u.uuid);
      assert.equal(await storedKarma(t, u.uuid), 10);
      const foreign = await t.inject({
        method: 'POST',
        url: `/karma/${rec?.uuid}/delete`,
        token: alice.token,
      });
      assert.equal(foreign.statusCode, 404);
      const res = await t.inject({ method: 'POST', url: `/karma/${rec?.uuid}/delete`, token: u.token });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(Object.keys(body(res)).sort(), ['status', 'timestamp']);
      assert.equal(body(res).status, 'OK');
      assert.equal(await storedKarma(t, u.uuid), 0);
      const again = await t.inject({ method: 'POST', url: `/karma/${rec?.uuid}/delete`, token: u.token });
      assert.equal(again.statusCode, 404);
      assert.equal(body(again).error.code, 'object_not_found');
      const get = await t.inject({ method: 'GET', url: `/karma/${rec?.uuid}`, token: u.token });
      assert.equal(get.statusCode, 404);
    });

    it('deleting a subtract record is refused (400): it would give back points for a deleted post', async () => {
      const u = await t.createUser();
      const p = await d.createPost(u);
      await d.deletePost(u, p);
      const sub = (await ledger(t, u.uuid)).find((r) => r.karma_type === 'subtract');
      assert.equal(sub?.event, 'postDeleted');
      assert.equal(await storedKarma(t, u.uuid), 0);
      const res = await t.inject({ method: 'POST', url: `/karma/${sub?.uuid}/delete`, token: u.token });
      assert.equal(res.statusCode, 400);
      assert.equal(body(res).error.code, 'invalid_request');
      assert.equal(await storedKarma(t, u.uuid), 0);
      assert.equal(await ledgerSum(t, u.uuid), 0);
    });
  });

  describe(`GET /karma [${dialect.name}]`, () => {
    let t: TestApp;
    let d: KarmaDriver;
    let carol: TestUser;
    let dave: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      d = new KarmaDriver(t);
      carol = await t.createUser();
      dave = await t.createUser();
      const p1 = await d.createPost(carol, 'one');
      await d.createPost(carol, 'two');
      await d.createComment(carol, p1);
      await d.createNetwork(carol);
      await d.createPost(carol, 'three');
      await d.createPost(dave, 'dave');
    });
    after(async () => t?.close());

    async function list(query: string, token = carol.token) {
      return t.inject({ method: 'GET', url: `/karma${query}`, token });
    }

    it('lists only the caller own records, newest first, with an exact total', async () => {
      const res = await list('');
      assert.equal(res.statusCode, 200);
      const b = body(res);
      assert.deepEqual(b.count, { offset: 0, limit: 20, total: 5 });
      assert.deepEqual(
        b.data.map((k: { event: string }) => k.event),
        ['postCreated', 'networkCreated', 'commentCreated', 'postCreated', 'postCreated'],
      );
      assert.ok(
        b.data.every(
          (k: { user_uuid: string; type: string }) => k.user_uuid === carol.uuid && k.type === 'karma',
        ),
      );
      assert.deepEqual(Object.keys(b.data[0]).sort(), FIELDS);
      const daves = body(await list('', dave.token));
      assert.equal(daves.count.total, 1);
    });

    it('filters, sorts and pages', async () => {
      const posts = body(await list('?filterby[event]=postCreated'));
      assert.equal(posts.count.total, 3);
      const big = body(await list('?filterby[points][gt]=1&sortby[points]=asc'));
      assert.deepEqual(
        big.data.map((k: { points: number }) => k.points),
        [2, 2, 2, 10],
      );
      assert.equal(big.count.total, 4);
      const like = body(await list('?filterby[event][like]=%25created&filterby[target_type][ne]=post'));
      assert.deepEqual(like.data.map((k: { event: string }) => k.event).sort(), [
        'commentCreated',
        'networkCreated',
      ]);
      // The events are a closed set: a like picks among them, and a value outside it is refused.
      assert.equal(body(await list('?filterby[event][like]=%25umi%25')).count.total, 0);
      assert.equal(body(await list('?filterby[event][like]=POST%25')).count.total, 3);
      const unknown = await list('?filterby[event]=postcreated');
      assert.equal(unknown.statusCode, 400, unknown.body);
      assert.equal(body(unknown).error.code, 'invalid_request');
      const page = body(await list('?sortby[created_at]=asc&limit=2&page=2'));
      assert.deepEqual(page.count, { offset: 2, limit: 2, total: 5 });
      assert.deepEqual(
        page.data.map((k: { event: string }) => k.event),
        ['commentCreated', 'networkCreated'],
      );
      const first = body(await list('?sortby[created_at]=asc&limit=1')).data[0];
      const since = body(await list(`?filterby[created_at][gt]=${encodeURIComponent(first.created_at)}`));
      const all = body(await list('?limit=100')).data as { uuid: string; created_at: string }[];
      const later = all.filter((k) => Date.parse(k.created_at) > Date.parse(first.created_at));
      assert.equal(since.count.total, later.length);
      assert.deepEqual(
        since.data.map((k: { uuid: string }) => k.uuid).sort(),
        later.map((k) => k.uuid).sort(),
      );
      assert.ok(!since.data.some((k: { uuid: string }) => k.uuid === first.uuid));
      const add = body(await list('?filterby[karma_type]=add'));
      assert.equal(add.count.total, 5);
      // like on an enumeration picks its matching values (`post`, not `comment`/`network`); none is an empty page.
      const enumLike = body(await list('?filterby[target_type][like]=P_st'));
      assert.deepEqual(
        [...new Set(enumLike.data.map((k: { target_type: string }) => k.target_type))],
        ['post'],
      );
      assert.equal(enumLike.count.total, posts.count.total);
      const noEnum = body(await list('?filterby[target_type][like]=%25tra%25'));
      assert.deepEqual(noEnum.count.total, 0);
      assert.deepEqual(noEnum.data, []);
    });

    it('pages a filtered list in the order of the unfiltered one, and past its end with the exact total', async () => {
      type Row = { uuid: string; event: string; points: number };
      const all: Row[] = body(await list('')).data;
      const newestPosts = all.filter((k) => k.event === 'postCreated').map((k) => k.uuid);
      // Few matches: read through the filter's index and sorted (SQLite: sortMatches; PostgreSQL: listFewKarmaOfUser);
      // the page is the same as walking the sort's index.
      const page = body(await list('?filterby[event]=postCreated&limit=2&offset=1'));
      assert.deepEqual(page.count, { offset: 1, limit: 2, total: 3 });
      assert.deepEqual(
        page.data.map((k: Row) => k.uuid),
        newestPosts.slice(1, 3),
      );
      // A filter that leaves some records out, two sort keys and the tie-breaker, against the unfiltered list.
      type Full = Row & { created_at: string };
      const expected = (all as Full[])
        .filter((k) => k.points >= 2)
        .sort(
          (a, b) =>
            b.points - a.points || a.created_at.localeCompare(b.created_at) || a.uuid.localeCompare(b.uuid),
        )
        .map((k) => k.uuid);
      assert.ok(expected.length > 0 && expected.length < all.length);
      const byPoints = body(await list('?filterby[points][ge]=2&sortby[points]=desc&sortby[created_at]=asc'));
      assert.deepEqual(
        byPoints.data.map((k: Row) => k.uuid),
        expected,
      );
      const past = body(await list('?filterby[event]=postCreated&offset=3'));
      assert.deepEqual(past.data, []);
      assert.deepEqual(past.count, { offset: 3, limit: 20, total: 3 });
    });

    it('fetches by uuids, ignoring other filters, and never another user record', async () => {
      const mine = body(await list('?limit=2')).data.map((k: { uuid: string }) => k.uuid);
      const daves = body(await list('', dave.token)).data.map((k: { uuid: string }) => k.uuid);
      const res = body(await list(`?uuids=${[...mine, ...daves].join(',')}&filterby[event]=networkCreated`));
      assert.equal(res.count.total, 2);
      assert.deepEqual(res.data.map((k: { uuid: string }) => k.uuid).sort(), [...mine].sort());
    });

    it('answers 400 for unknown properties, operators, directions and values', async () => {
      for (const q of [
        '?filterby[user_uuid]=x',
        '?filterby[points][between]=1',
        '?sortby[points]=up',
        '?sortby[password]=asc',
        '?filterby[points]=many',
        '?filterby[karma_type]=multiply',
        '?limit=0',
        '?offset=1&page=2',
        '?uuids=nope',
        '?color=red',
      ]) {
        const res = await list(q);
        assert.equal(res.statusCode, 400, `${q}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request');
      }
    });
  });
}
