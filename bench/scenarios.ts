// The benchmark scenarios: each one is a request (or a rotation of requests) autocannon sends against the API.
// Everything they address (a tag, a karma record, a user to mention) is looked up through the API first.
import type autocannon from 'autocannon';
import { Zipf } from '../src/cli/seed/random.ts';
import { SEED_LANGUAGES, vocabulary } from '../src/cli/seed/vocabulary.ts';
import { BENCH_USERNAME, POST_WORDS, SEED_PASSWORD, WORLD_DEFAULTS } from '../src/cli/seed/world.ts';

/** How every post of the write scenario starts (its hashtags and mention follow the world's most used ones). */
export const BENCH_POST_TEXT = 'benchmark post about coffee and music';

/** The name of the single tag read, whose answer the floor answers too (bench/floor.ts). */
export const TAG_READ = 'GET /tags/{uuid}';

/** One scenario: a request (or a rotation of them) driven by autocannon. */
export interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  /** When set, each connection cycles through these requests instead of `path`. */
  requests?: autocannon.Request[];
  /** Search scenarios also timed against the LIKE '%term%' baseline; the terms of the query. */
  likeTerms?: string[];
  /** When set, connection i sends the i-th of these (cycling) instead of `headers`: many users at once. */
  connectionHeaders?: Record<string, string>[];
  /** A load driven at the same time on its own connections (writes the read competes with). */
  alongside?: { scenario: Scenario; connections: number };
}

/** How many users the many-users scenario logs in (at most): one per connection of the harness's default 50. */
export const MANY_USERS = 50;

/**
 * The world's 20 commonest words, commonest first (what users type most, in every seeded language): by the share of
 * posts expected to hold each, from the languages' shares, their Zipf vocabularies and a post's length. Within 3% of
 * the seeded world's own counts (`the` in 547,349 of its 1,000,000 posts, `der` in 225,634, `for` in 91,993).
 */
export function commonestWords(n = 20): string[] {
  const held = new Map<string, number>();
  const lengths = POST_WORDS.max - POST_WORDS.min + 1;
  for (const { code, weight } of SEED_LANGUAGES) {
    const words = vocabulary(code, WORLD_DEFAULTS.vocabularySize);
    const zipf = new Zipf(words.length);
    // The head words (the first 55-140 of each language, whatever the seed) hold every common word.
    for (let rank = 0; rank < 200; rank++) {
      const p = zipf.probability(rank);
      let share = 0;
      for (let length = POST_WORDS.min; length <= POST_WORDS.max; length++) share += 1 - (1 - p) ** length;
      const word = (words[rank] as string).toLowerCase();
      held.set(word, (held.get(word) ?? 0) + (weight * share) / lengths);
    }
  }
  return [...held]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([word]) => word);
}

/** A rare word: one from the far tail of the seeded English vocabulary. */
export function rareWord(): string {
  const words = vocabulary('en', 20_000, 1);
  return words[15_000] as string;
}

async function json(res: Response, what: string): Promise<Record<string, unknown>> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Logs in a seeded user (password grant) and returns the access token. */
async function seededToken(
  base: string,
  client: { id: string; secret: string },
  username: string,
): Promise<string> {
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'password',
      username,
      password: SEED_PASSWORD,
      client_id: client.id,
      client_secret: client.secret,
    }),
  });
  const body = await json(res, `password grant for ${username}`);
  return body.access_token as string;
}

/** Logs in as bench_user (password grant) and returns the access token. */
export async function benchToken(base: string, client: { id: string; secret: string }): Promise<string> {
  return seededToken(base, client, BENCH_USERNAME);
}

/** Builds the scenario list against a running API on a seeded database. */
export async function scenarios(base: string, client: { id: string; secret: string }): Promise<Scenario[]> {
  const token = await benchToken(base, client);
  const headers = { authorization: `Bearer ${token}` };
  const get = async (path: string) => json(await fetch(`${base}${path}`, { headers }), `GET ${path}`);

  const tags = await get(
    '/tags?filterby[tag_type]=hashtag&sortby[associations_count]=desc&sortby[name]=asc&limit=1',
  );
  const tag = (tags.data as { uuid: string; name: string }[])[0];
  if (!tag) throw new Error('the database has no hashtag: seed it first (npm run seed)');
  const karma = await get('/karma?limit=1');
  const record = (karma.data as { uuid: string }[])[0];
  if (!record) throw new Error('bench_user has no karma record: seed the database first (npm run seed)');
  const mentions = await get('/tags?filterby[tag_type]=mention&sortby[associations_count]=desc&limit=1');
  const mentioned = (mentions.data as { name: string }[])[0]?.name ?? BENCH_USERNAME;

  const common = commonestWords();
  const rare = rareWord();
  const q = (query: string) => `/search?query=${encodeURIComponent(query)}`;
  const scenario = (name: string, path: string, likeTerms?: string[]): Scenario => ({
    name,
    method: 'GET',
    path,
    headers,
    ...(likeTerms ? { likeTerms } : {}),
  });
  const list: Scenario[] = [
    scenario(TAG_READ, `/tags/${tag.uuid}`),
    scenario(
      'GET /tags filter + two sort keys',
      '/tags?filterby[tag_type]=hashtag&sortby[associations_count]=desc&sortby[created_at]=asc&limit=20',
    ),
    scenario('GET /tag-associations by tag', `/tag-associations?filterby[tag_uuid]=${tag.uuid}&limit=20`),
    scenario('GET /karma/{uuid}', `/karma/${record.uuid}`),
    scenario(`GET /search rare word (${rare})`, q(rare), [rare]),
    scenario('GET /search common word (love)', q('love'), ['love']),
    {
      ...scenario('GET /search 20 commonest words, rotating', q(common[0] as string)),
      requests: common.map((w) => ({ method: 'GET', path: q(w), headers })),
    },
    scenario('GET /search two words (coffee morning)', q('coffee morning'), ['coffee', 'morning']),
    scenario('GET /search prefix (mus)', q('mus'), ['mus']),
    scenario('GET /search/types (coffee)', `/search/types?query=coffee&limit=5`),
    scenario('GET /search/users prefix (ann)', '/search/users?query=ann'),
    scenario('GET /search/complete (an)', '/search/complete?query=an'),
    {
      name: 'POST /posts with hashtags and a mention',
      method: 'POST',
      path: '/posts',
      headers: { ...headers, 'content-type': 'application/json' },
      requests: [
        {
          method: 'POST',
          path: '/posts',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({
            body: `${BENCH_POST_TEXT} #${tag.name} #benchmark @${mentioned}`,
            visibility: 'public',
            language: 'en',
          }),
        },
      ],
    },
  ];
  // Many users reading while one writes: each commit moves the data version, so every cached answer is computed
  // again, but a token check only when tokens change (the auth version, docs/decisions.md).
  const found = await get(`/search/users?query=${encodeURIComponent('a')}&limit=${MANY_USERS}`);
  // A smaller world (`--users` under 50) logs in the users it has of those the search finds.
  const usernames = (found.data as { username: string }[]).map((u) => u.username);
  if (usernames.length === 0) throw new Error('the world has no user to log in');
  const tokens: string[] = [];
  for (const username of usernames) tokens.push(await seededToken(base, client, username));
  const write = list.find((s) => s.method === 'POST') as Scenario;
  list.push({
    ...scenario(`GET /tags/{uuid} as ${tokens.length} users while bench_user posts`, `/tags/${tag.uuid}`),
    connectionHeaders: tokens.map((token) => ({ authorization: `Bearer ${token}` })),
    alongside: { scenario: write, connections: 10 },
  });
  // The commonest-word rotation is compared with LIKE word by word too, all 20: each is a search users make.
  const rotation = list.find((s) => s.requests && s.method === 'GET');
  if (rotation) rotation.likeTerms = common;
  // Every read the exact caches serve (searches, tags, tag associations, karma records) is also measured uncached.
  return list.flatMap((s) => (s.method === 'GET' && !s.alongside ? [s, uncached(s)] : [s]));
}

/** Headers that ask the API for an answer computed afresh, not one from its exact answer cache. */
export const NO_CACHE = { 'cache-control': 'no-cache' } as const;

/**
 * The same read with `Cache-Control: no-cache`: every request pays the whole search, as when writes keep
 * invalidating the cache (docs/search.md, "Speed").
 */
function uncached(s: Scenario): Scenario {
  const headers = { ...s.headers, ...NO_CACHE };
  return {
    name: `${s.name}, uncached`,
    method: s.method,
    path: s.path,
    headers,
    ...(s.requests
      ? { requests: s.requests.map((r) => ({ ...r, headers: { ...r.headers, ...NO_CACHE } })) }
      : {}),
  };
}
