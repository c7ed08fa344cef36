// The friends test of the visibility rules probes the friends table per row it is asked for (isFriendOf in
// src/modules/connection/visibility.ts, used by the tag association rule and the search walks). PostgreSQL would otherwise hash every friend of the viewer once per statement: for a
// viewer with thousands of friends that cost more than the walk it served (GET /tags/{uuid} on the seeded world's hub,
// 8,600 friends: 6 ms of which 2.4 ms built the hash). The plan is what users would notice, as latency; it is
// checked here on a viewer with 3,000 friends, with the statistics PostgreSQL plans from.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId, sql } from 'kysely';
import { nowIso } from '../../src/db/time.ts';
import { findMatchesById } from '../../src/modules/search/search-walk.repository.ts';
import { findVisibleTagsForViewersPg } from '../../src/modules/tag/tag.repository.ts';
import { newestAssociationsOf } from '../../src/modules/tag-association/tag-association.repository.ts';
import {
  body,
  bulkUserRow,
  genericPlans,
  insertInBatches,
  recordingQueries,
  testDialects,
} from '../helper.ts';
import { type LoggedApp, startLoggedApp, UNLIMITED } from '../reliability/support.ts';

const FRIENDS = 3000;
const pgDialect = testDialects().find((d) => d.name === 'postgres');

describe('friends probed per row, not hashed per statement [postgres]', { skip: !pgDialect }, () => {
  let t: LoggedApp;
  let hub: { uuid: string; token: string };
  let friend: { uuid: string; token: string };
  let tagUuid: string;

  before(async () => {
    t = await startLoggedApp(pgDialect as never, UNLIMITED);
    hub = await t.createUser();
    friend = await t.createUser();
    const now = nowIso();
    const others = Array.from({ length: FRIENDS }, (_, i) => bulkUserRow(`hubfriend${i}`, now));
    await insertInBatches(t.ctx.db, 'users', others);
    const friendRows = [...others.map((o) => o.uuid as string), friend.uuid].map((f) => ({
      user_uuid: hub.uuid,
      friend_uuid: f,
    }));
    await insertInBatches(t.ctx.db, 'friends', friendRows);
    await t.ctx.db.insertInto('friends').values({ user_uuid: friend.uuid, friend_uuid: hub.uuid }).execute();
    // A tag used in the friend's friends-only posts: the hub sees them through the friends rule only.
    for (let i = 0; i < 30; i++) {
      const res = await t.inject({
        method: 'POST',
        url: '/posts',
        token: friend.token,
        payload: { body: `close ${i} #innercircle`, visibility: 'friends' },
      });
      assert.equal(res.statusCode, 201, res.body);
    }
    const tag = await t.ctx.db
      .selectFrom('tags')
      .select('uuid')
      .where('name_key', '=', 'innercircle')
      .executeTakeFirstOrThrow();
    tagUuid = tag.uuid;
    await sql`analyze`.execute(t.ctx.db);
  });
  after(async () => t?.close());

  it("a friend's friends-only tag: the hub sees it and its associations, a stranger gets 404", async () => {
    const seen = await t.inject({ method: 'GET', url: `/tags/${tagUuid}`, token: hub.token });
    assert.equal(seen.statusCode, 200, seen.body);
    assert.equal(body(seen).data.associations.length, 30);
    const stranger = await t.createUser();
    const hidden = await t.inject({ method: 'GET', url: `/tags/${tagUuid}`, token: stranger.token });
    assert.equal(hidden.statusCode, 404, hidden.body);
  });

  it("the newest visible associations of a tag probe the hub's friends per row", async () => {
    const compiled = t.ctx.db
      .selectFrom('tags')
      .select(newestAssociationsOf(t.ctx.dialect, 'tags.uuid', 100, hub.uuid).as('associations'))
      .where('uuid', '=', tagUuid)
      .compile();
    const explained = await t.ctx.db.executeQuery<{ 'QUERY PLAN': string }>({
      ...compiled,
      sql: `EXPLAIN ${compiled.sql}`,
    });
    const plan = explained.rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.doesNotMatch(plan, /hashed SubPlan/, plan);
    assert.match(plan, /Index (Only )?Scan using friends_\w+ on friends/, plan);
  });

  it("the batched tag reads (one statement a turn) probe each viewer's friends per row in their generic plan", async () => {
    const { db, nodes } = recordingQueries(t.ctx.db);
    const found = await findVisibleTagsForViewersPg(
      db,
      [
        { uuid: tagUuid, viewer: hub.uuid },
        { uuid: tagUuid, viewer: null },
      ],
      100,
    );
    assert.deepEqual([found.get(0)?.associations.length, found.get(1)], [30, undefined]);
    // A prepared statement's plan after five runs: the one every later turn's batch runs.
    const [generic] = await genericPlans(t.ctx.db, nodes, { seqscan: false });
    const plan = generic?.plan ?? '';
    assert.doesNotMatch(plan, /hashed SubPlan/, plan);
    assert.match(plan, /Index (Only )?Scan using friends_\w+ on friends/, plan);
    assert.match(plan, /Index Scan using tags_pkey on tags/, plan);
    assert.match(plan, /using tag_associations_tag_created_audience on tag_associations/, plan);
  });

  it("a search finds the friend's friends-only posts for the hub and nothing for a stranger", async () => {
    const found = await t.inject({
      method: 'GET',
      url: '/search?query=innercircle&limit=50',
      token: hub.token,
    });
    assert.equal(found.statusCode, 200, found.body);
    assert.equal(body(found).data.length, 30);
    const stranger = await t.createUser();
    const none = await t.inject({ method: 'GET', url: '/search?query=innercircle', token: stranger.token });
    assert.equal(none.statusCode, 200, none.body);
    assert.deepEqual(body(none).data, []);
  });

  it("a search walk probes the hub's friends per row", async () => {
    // Index documents only (the plan's statistics need many friends-only matches; nothing here reads their items):
    // 8,000 friends-only documents of the hub's friends with the word.
    await sql`insert into search_docs (kind, uuid, owner_uuid, visibility, body, created_at, updated_at)
      select 'post', gen_random_uuid()::text, u.uuid, 'friends', 'close to the hub ' || g, now(), now()
      from generate_series(1, 8000) g
      join users u on u.username = 'hubfriend' || (g % ${FRIENDS})`.execute(t.ctx.db);
    await sql`analyze search_docs`.execute(t.ctx.db);
    // The statements of one walk, as the search sends them, each explained with the parameters it was sent with.
    const { db, nodes } = recordingQueries(t.ctx.db);
    const scope = { kinds: ['post', 'comment'] as const, viewer: hub.uuid };
    const walk = { direction: 'desc' as const, offset: 0, limit: 20, withText: true };
    const found = await findMatchesById(db, 'postgres', { terms: ['close'] }, scope, walk);
    assert.equal(found.length, 20);
    assert.ok(nodes.length > 0);
    for (const node of nodes) {
      const compiled = t.ctx.db.getExecutor().compileQuery(node, createQueryId());
      const explained = await t.ctx.db.executeQuery<{ 'QUERY PLAN': string }>({
        ...compiled,
        sql: `EXPLAIN ${compiled.sql}`,
      });
      const plan = explained.rows.map((r) => r['QUERY PLAN']).join('\n');
      assert.doesNotMatch(plan, /hashed SubPlan/, plan);
    }
  });
});
