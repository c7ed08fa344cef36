import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DOC_KINDS } from '../../src/modules/search/search.repository.ts';
import { deepWalkSplit, deepWalkTuning } from '../../src/modules/search/search-density.repository.ts';
import { docIdRange } from '../../src/modules/search/search-ends.repository.ts';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { befriend, call, readAllPages } from './world.ts';

// Deep pages (docs/search.md, "Deep pages"): a page past the ranked candidates is found by a walk of its own, not by
// ranking and skipping. Every page must still be the same slice of one total order: the concatenation of small pages
// equals the list read in pages of 100, for every viewer and operation. Shrunk tuning (10 ranked candidates, 2 per
// /search/types column) puts most pages of this small world on the deep path.
const TUNING = { rankedCandidates: 10, recentDocs: 40 };

interface DeepWorld {
  owner: TestUser;
  friend: TestUser;
  /** Items a guest must never see. */
  hidden: Set<string>;
}

async function buildDeepWorld(t: TestApp): Promise<DeepWorld> {
  const owner = await t.createUser('kiwi_owner');
  const friend = await t.createUser('kiwi_friend');
  const other = await t.createUser('plum_writer');
  await befriend(t, owner, friend);
  const hidden = new Set<string>();
  const visibilities = ['public', 'friends', 'private', 'public', 'public'];
  const words = ['run', 'runs', 'running', 'runner'];
  for (let i = 0; i < 70; i++) {
    const who = i % 3 === 0 ? other : owner;
    const visibility = visibilities[i % visibilities.length] as string;
    const text = `kiwi ${words[i % words.length]} number ${i}${i % 4 === 0 ? ' kiwi again' : ''}`;
    const post = await call(t, 'POST', '/posts', who.token, { body: text, visibility });
    if (visibility !== 'public') hidden.add(post.uuid);
    if (i % 6 === 0) {
      const comment = await call(t, 'POST', `/posts/${post.uuid}/comments`, who.token, {
        body: `kiwi comment ${i} running`,
      });
      if (visibility !== 'public') hidden.add(comment.uuid);
    }
    // Unrelated documents between the matches, as in any real index.
    if (i % 5 === 0) await call(t, 'POST', '/posts', other.token, { body: `plum only ${i}` });
  }
  // The owner's friends: a friends-only search pages through them (and a page past them is empty at once).
  for (let i = 0; i < 12; i++) await befriend(t, owner, await t.createUser(`kiwi_fan_${i}`));
  for (let i = 0; i < 12; i++) {
    await call(t, 'POST', '/networks', other.token, { name: `Kiwi club ${i}`, description: 'fruit' });
  }
  return { owner, friend, hidden };
}

for (const dialect of testDialects()) {
  describe(`search deep pages: one total order, page after page [${dialect.name}]`, () => {
    let t: TestApp;
    let w: DeepWorld;
    const standard = { ...searchTuning };
    // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
    const uuids = (items: any[]) => items.map((i) => i.uuid as string);
    // `fresh`: computed anew, not from the answer cache (a page asked again under another tuning).
    const get = async (url: string, token: string, fresh = false) => {
      const headers = fresh ? { 'cache-control': 'no-cache' } : {};
      const res = await t.inject({ method: 'GET', url, token, headers });
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
      return body(res).data;
    };
    /** Every item of a list operation, read in pages of `limit` until a short page. */
    const readAll = (url: string, token: string, limit: number, fresh = false) =>
      readAllPages(t, url, token, limit, fresh ? { 'cache-control': 'no-cache' } : {});

    before(async () => {
      t = await startTestApp(dialect);
      w = await buildDeepWorld(t);
      Object.assign(searchTuning, TUNING);
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('GET /search, /search/users and /search/networks: small pages concatenate to the whole list', async () => {
      const cases: [string, string, string][] = [
        ['guest', '/search?query=kiwi', t.guest],
        ['guest, prefix', '/search?query=kiw', t.guest],
        ['guest, two words', '/search?query=kiwi%20runn', t.guest],
        ['guest, stemmed (two indexes)', '/search?query=kiwi%20running&language=en', t.guest],
        ['guest, oldest first', '/search?query=kiwi&order=created_at:asc', t.guest],
        ['guest, relevance ascending', '/search?query=kiwi&order=relevance:asc', t.guest],
        ['friend', '/search?query=kiwi', w.friend.token],
        ['owner, stemmed', '/search?query=kiwi%20running&language=en', w.owner.token],
        ['users', '/search/users?query=kiwi', t.guest],
        ['users with typos only', '/search/users?query=kiwj', t.guest],
        ['friends', '/search/friends?query=kiwi', w.owner.token],
        ['networks', '/search/networks?query=kiwi', t.guest],
      ];
      for (const [label, url, token] of cases) {
        const whole = await readAll(url, token, 100);
        assert.ok(whole.length > 10, `${label}: ${whole.length} items, too few to page`);
        assert.equal(new Set(whole).size, whole.length, `${label}: every item once`);
        assert.deepEqual(await readAll(url, token, 7), whole, label);
        // One deep page on its own (no shallower page asked before it) is the same slice.
        const deep = uuids(await get(`${url}&limit=5&offset=${whole.length - 3}`, token));
        assert.deepEqual(deep, whole.slice(whole.length - 3), `${label}: last page`);
        assert.deepEqual(
          await get(`${url}&limit=5&offset=${whole.length}`, token),
          [],
          `${label}: past the end`,
        );
        if (token === t.guest) {
          assert.deepEqual(
            whole.filter((u) => w.hidden.has(u)),
            [],
            `${label}: a guest sees public items only`,
          );
        }
      }
      // The deep walk honours privacy: the friend and the owner see more than a guest.
      const guest = await readAll('/search?query=kiwi', t.guest, 100);
      const friend = await readAll('/search?query=kiwi', w.friend.token, 100);
      const owner = await readAll('/search?query=kiwi', w.owner.token, 100);
      assert.ok(guest.length < friend.length && friend.length < owner.length);
    });

    it('GET /search/types: each column pages like its own list, empty past its end', async () => {
      for (const [url, token] of [
        ['/search/types?query=kiwi', t.guest],
        ['/search/types?query=kiwi%20running&language=en', w.friend.token],
      ] as const) {
        const whole = await get(`${url}&limit=100`, token);
        const paged: Record<string, string[]> = {};
        for (let offset = 0; offset < 100; offset += 4) {
          const page = await get(`${url}&limit=4&offset=${offset}`, token);
          for (const [kind, items] of Object.entries(page)) {
            paged[kind] = [...(paged[kind] ?? []), ...uuids(items as object[])];
          }
        }
        for (const kind of Object.keys(whole)) {
          assert.deepEqual(paged[kind], uuids(whole[kind]), `${url}: ${kind}`);
        }
        assert.ok(whole.post.length > 20 && whole.comment.length > 5, `${url}: enough to page`);
      }
    });

    it("PostgreSQL: a signed-in deep walk takes its density from the kinds besides messages, not others' messages", {
      skip: dialect.name !== 'postgres',
    }, async () => {
      // The newest documents are messages between two other users, and one of the owner's own among them: sampled
      // with the messages, the owner's density was 1 match in 10 ids, and the split fell to the first id.
      const [a, b] = [await t.createUser('kiwi_chat_a'), await t.createUser('kiwi_chat_b')];
      for (let i = 0; i < 12; i++) {
        if (i === 4)
          await call(t, 'POST', '/messages', w.owner.token, { recipient_uuid: a.uuid, body: 'kiwi for you' });
        await call(t, 'POST', '/messages', a.token, { recipient_uuid: b.uuid, body: `kiwi chat ${i}` });
      }
      const { first, last } = await docIdRange(t.ctx.db, 'postgres', DOC_KINDS);
      const split = (viewer: string | null) =>
        deepWalkSplit(
          t.ctx.db,
          'postgres',
          { terms: ['kiwi'] },
          { kinds: DOC_KINDS, viewer },
          { first, top: last },
          40,
        );
      const standardDeep = { ...deepWalkTuning };
      try {
        Object.assign(deepWalkTuning, { densitySample: 10, spreadRanges: 0 });
        // Bounded below the newest documents besides messages, as a guest's: not the whole index.
        for (const viewer of [w.owner.uuid, null]) {
          const s = await split(viewer);
          assert.ok(s && s.walkAbove > first - 1, JSON.stringify({ viewer, s, first, last }));
        }
        // The owner's deep pages, walked from that split, are the same slices of one order as whole pages.
        const whole = await readAll('/search?query=kiwi', w.owner.token, 100, true);
        assert.ok(whole.length > 40, `${whole.length} items`);
        assert.deepEqual(await readAll('/search?query=kiwi', w.owner.token, 7, true), whole);
      } finally {
        Object.assign(deepWalkTuning, standardDeep);
      }
    });

    it('PostgreSQL: a deep walk weighs the newest matches with ranges spread below them', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      // The newest documents all match, where the older ones match one in two or less: from the newest alone the
      // range expected to hold the page's matches is short, and the walk would need a second query. With the spread
      // ranges in the sample the first range is longer; the pages are the same slices of one order either way.
      for (let i = 0; i < 10; i++)
        await call(t, 'POST', '/posts', w.owner.token, { body: `kiwi burst ${i}` });
      const { first, last } = await docIdRange(t.ctx.db, 'postgres', DOC_KINDS);
      const split = () =>
        deepWalkSplit(
          t.ctx.db,
          'postgres',
          { terms: ['kiwi'] },
          { kinds: DOC_KINDS, viewer: null },
          { first, top: last },
          40,
        );
      const standardDeep = { ...deepWalkTuning };
      try {
        Object.assign(deepWalkTuning, { densitySample: 10, spreadRanges: 0 });
        const newestOnly = await split();
        Object.assign(deepWalkTuning, { densitySample: 10, spreadRanges: 4, spreadRangeIds: 5 });
        const blended = await split();
        assert.ok(newestOnly && blended, JSON.stringify({ newestOnly, blended }));
        assert.ok(
          blended.walkAbove < newestOnly.walkAbove,
          JSON.stringify({ newestOnly, blended, first, last }),
        );
        const whole = await readAll('/search?query=kiwi', t.guest, 100, true);
        assert.ok(whole.length > 40, `${whole.length} items`);
        assert.deepEqual(await readAll('/search?query=kiwi', t.guest, 7, true), whole);
      } finally {
        Object.assign(deepWalkTuning, standardDeep);
      }
    });

    it('a block of new documents without the words leaves every deep page as it was', async () => {
      // Last: the block changes the newest documents for the tests above. With a density sample of the newest 10 ids
      // only, PostgreSQL finds no match there and estimates the density from ranges spread below the block
      // (deepWalkTuning); the pages are the same slices of one order with those ranges and without them.
      const other = await t.createUser('block_writer');
      for (let i = 0; i < 15; i++) await call(t, 'POST', '/posts', other.token, { body: `plum block ${i}` });
      const standardDeep = { ...deepWalkTuning };
      try {
        for (const [url, token] of [
          ['/search?query=kiwi', t.guest],
          ['/search?query=kiw', w.friend.token],
          ['/search?query=kiwi%20running&language=en', w.owner.token],
        ] as const) {
          Object.assign(deepWalkTuning, { densitySample: 10, spreadRanges: 0 });
          const whole = await readAll(url, token, 100);
          assert.ok(whole.length > 20, `${url}: ${whole.length} items`);
          for (const spread of [
            { spreadRanges: 0, spreadRangeIds: 5 },
            { spreadRanges: 4, spreadRangeIds: 5 },
            { spreadRanges: 2, spreadRangeIds: 10 },
          ]) {
            Object.assign(deepWalkTuning, spread);
            assert.deepEqual(await readAll(url, token, 6, true), whole, `${url} ${JSON.stringify(spread)}`);
            const deep = uuids(await get(`${url}&limit=5&offset=${whole.length - 4}`, token, true));
            assert.deepEqual(deep, whole.slice(whole.length - 4), `${url}: last page`);
          }
        }
      } finally {
        Object.assign(deepWalkTuning, standardDeep);
      }
    });
  });
}
