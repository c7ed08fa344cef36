import assert from 'node:assert/strict';
import { createQueryId, sql } from 'kysely';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { type SearchParams, search } from '../../src/modules/search/search.service.ts';
import { body, recordingQueries, type TestApp, type TestUser } from '../helper.ts';

/** A small world: an owner (alice), her friend (bob), a stranger (carol), other users, content in every visibility. */
export interface World {
  alice: TestUser;
  bob: TestUser;
  carol: TestUser;
  john: TestUser;
  /** uuid by a short label of each item. */
  ids: Record<string, string>;
}

/** Sends a request that must succeed and returns its data. */
export async function call(
  t: TestApp,
  method: 'GET' | 'POST',
  url: string,
  token: string,
  payload?: object,
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
): Promise<any> {
  const res = await t.inject({ method, url, token, ...(payload ? { payload } : {}) });
  assert.ok(res.statusCode < 300, `${method} ${url} answered ${res.statusCode}: ${res.body}`);
  return body(res).data;
}

/** The items a GET `url` answers with 200, computed afresh (`Cache-Control: no-cache`), not from the answer cache. */
// biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
export async function getFresh(t: TestApp, url: string, token: string): Promise<any> {
  const res = await t.inject({ method: 'GET', url, token, headers: { 'cache-control': 'no-cache' } });
  assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
  return body(res).data;
}

/**
 * The uuids of every item a search or list `url` (with a query string) answers, read in pages of `limit` until a
 * short page; `headers` go with each request (`Cache-Control: no-cache` to compute every page afresh).
 */
export async function readAllPages(
  t: TestApp,
  url: string,
  token: string,
  limit: number,
  headers: Record<string, string> = {},
): Promise<string[]> {
  const all: string[] = [];
  for (let offset = 0; ; offset += limit) {
    const res = await t.inject({
      method: 'GET',
      url: `${url}&limit=${limit}&offset=${offset}`,
      token,
      headers,
    });
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    const page = (body(res).data as { uuid: string }[]).map((i) => i.uuid);
    all.push(...page);
    if (page.length < limit) return all;
  }
}

/**
 * One search as `viewer` (null: a guest), called in process, with every statement it sent: the query nodes (for
 * explainRecorded) and their SQL text.
 */
export async function recordedSearch(t: TestApp, viewer: string | null, params: SearchParams) {
  const { db, nodes } = recordingQueries(t.ctx.db);
  const page = await search({ ...t.ctx, readDb: db }, viewer, params);
  return {
    page,
    nodes,
    texts: nodes.map((node) => db.getExecutor().compileQuery(node, createQueryId()).sql),
  };
}

/**
 * Stores public English posts by one author straight into the database, in order, a thousand per statement (the
 * index's triggers index them); returns their uuids.
 */
export async function insertPosts(t: TestApp, authorUuid: string, bodies: string[]): Promise<string[]> {
  const uuids: string[] = [];
  for (let i = 0; i < bodies.length; i += 1000) {
    const now = nowIso();
    const rows = bodies.slice(i, i + 1000).map((text) => {
      const uuid = uuidv7();
      uuids.push(uuid);
      return {
        uuid,
        user_uuid: authorUuid,
        body: text,
        visibility: 'public',
        language: 'en',
        created_at: now,
        updated_at: now,
      };
    });
    await t.ctx.db.insertInto('posts').values(rows).execute();
  }
  return uuids;
}

/** Makes two users confirmed friends through the API. */
export async function befriend(t: TestApp, a: TestUser, b: TestUser): Promise<void> {
  const conn = await call(t, 'POST', '/connections', a.token, { user_uuid: b.uuid });
  await call(t, 'POST', `/connections/${conn.uuid}/confirm`, b.token);
}

/** Stores a media record directly (uploads need files; the index only needs the row). */
export async function insertMedia(
  t: TestApp,
  owner: TestUser,
  fields: { title: string; description: string; visibility: string; language?: string },
): Promise<string> {
  const uuid = uuidv7();
  const now = nowIso();
  await t.ctx.db
    .insertInto('media')
    .values({
      uuid,
      user_uuid: owner.uuid,
      title: fields.title,
      description: fields.description,
      content_type: 'image/png',
      size: 10,
      visibility: fields.visibility,
      language: fields.language ?? 'en',
      storage_key: `k-${uuid}`,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return uuid;
}

/** Builds the world through the API (posts, comments, messages, networks, friendships) plus media rows. */
export async function buildWorld(t: TestApp): Promise<World> {
  const alice = await t.createUser('alice');
  const bob = await t.createUser('bob');
  const carol = await t.createUser('carol');
  const john = await t.createUser('john_smith');
  await t.createUser('johanna');
  await call(t, 'POST', `/users/${alice.uuid}/update`, alice.token, {
    display_name: 'Alice Wonder',
    bio: 'I love running and the Café de Flore',
  });
  await call(t, 'POST', `/users/${john.uuid}/update`, john.token, { display_name: 'John Smith' });
  await befriend(t, alice, bob);

  const ids: Record<string, string> = {
    alice: alice.uuid,
    bob: bob.uuid,
    carol: carol.uuid,
    john: john.uuid,
  };
  const post = async (label: string, who: TestUser, text: string, visibility = 'public', language = 'en') => {
    ids[label] = (await call(t, 'POST', '/posts', who.token, { body: text, visibility, language })).uuid;
  };
  await post('publicPost', alice, 'Running zebra in the park with a Café crème #javascript');
  await post('friendsPost', alice, 'zebra plan for friends only', 'friends');
  await post('privatePost', alice, 'zebra private diary', 'private');
  await post('germanPost', alice, 'Das Zebra läuft schnell', 'public', 'de');
  await post('carolPost', carol, 'carol writes about a zebra');
  await post('runPost', carol, 'I run every day');
  ids.publicComment = (
    await call(t, 'POST', `/posts/${ids.publicPost}/comments`, bob.token, { body: 'great zebra comment' })
  ).uuid;
  ids.friendsComment = (
    await call(t, 'POST', `/posts/${ids.friendsPost}/comments`, bob.token, {
      body: 'zebra reply on friends post',
    })
  ).uuid;
  ids.message = (
    await call(t, 'POST', '/messages', alice.token, {
      recipient_uuid: bob.uuid,
      body: 'zebra secret message',
    })
  ).uuid;
  ids.network = (
    await call(t, 'POST', '/networks', alice.token, {
      name: 'Zebra Runners',
      description: 'We run every morning',
    })
  ).uuid;
  ids.publicMedia = await insertMedia(t, alice, {
    title: 'Zebra photo',
    description: 'a striped animal',
    visibility: 'public',
  });
  ids.friendsMedia = await insertMedia(t, alice, {
    title: 'Zebra friends album',
    description: 'for friends',
    visibility: 'friends',
  });
  return { alice, bob, carol, john, ids };
}

/**
 * Waits until PostgreSQL counts every row of the index as inserted. A backend reports its tables' counters at most
 * once a second, an idle one up to 10 s later: rows it wrote before the analysis then counted as changed after it, and
 * the plans that weigh those rows (denseHeadPlan) were chosen from a world that had not changed.
 */
export async function insertsCounted(t: TestApp): Promise<void> {
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
    const r = await sql<{
      counted: boolean;
    }>`select coalesce(pg_stat_get_tuples_inserted('search_docs'::regclass), 0)
      >= (select count(*) from search_docs) as counted`.execute(t.ctx.db);
    if (r.rows[0]?.counted) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the inserted rows of search_docs were not counted within 15 s');
}
