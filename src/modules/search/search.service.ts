import type { Selectable } from 'kysely';
import { type Context, heavyRead, readCacheScope } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { type AnswerOptions, cachedRead } from '../../db/exact-cache.ts';
import type { ErrorDetail } from '../../http/errors.ts';
import { ApiError } from '../../http/errors.ts';
import { parseUuidList } from '../../http/list-query.ts';
import { resolveWindow, type Window } from '../../http/paging.ts';
import { toComment } from '../comment/comment.service.ts';
import { friendsAmong } from '../connection/connection.service.ts';
import { toMedia } from '../media/media.service.ts';
import { toMessage } from '../message/message.service.ts';
import { toNetwork } from '../network/network.service.ts';
import { toPost } from '../post/post.service.ts';
import { normalizeTagName } from '../tag/normalize.ts';
import { type ApiTag, ASSOCIATIONS_IN_TAG } from '../tag/tag.service.ts';
import type { TagTable } from '../tag/tag.table.ts';
import { findNewestAssociationUuids } from '../tag-association/tag-association.repository.ts';
import { toPublicUser } from '../user/user.service.ts';
import type { UserTable } from '../user/user.table.ts';
import {
  allowedEdits,
  candidateTrigrams,
  fold,
  MAX_TERMS,
  type Order,
  parseOrder,
  queryTerms,
  textTerms,
  typoDistance,
} from './search.query.ts';
import {
  DOC_KINDS,
  type DocKind,
  type DocRef,
  expandPrefix,
  findDocsInScope,
  findRowsByUuids,
  type Match,
  type Scope,
} from './search.repository.ts';
import { COMPLETE_MAX, CONTENT_ORDERS, USER_ORDERS } from './search.schemas.ts';
import {
  compactIndex,
  findIndexMismatches,
  type IndexMismatch,
  rebuildIndex,
} from './search-index.repository.ts';
import { withKindDocs } from './search-kind-docs.service.ts';
import {
  findHashtagsByPrefix,
  findNameCandidates,
  findUsersByUsernamePrefix,
} from './search-names.repository.ts';
import { exactDocs, searchTuning } from './search-ranking.service.ts';
import { findDocRows } from './search-rows.service.ts';
import { findMatchesById } from './search-walk.repository.ts';

/** Typo tolerance joins in when the exact matches are fewer than this. */
export const TYPO_WHEN_FEWER_THAN = 3;
/** Most typo-tolerant matches appended to a result. */
export const TYPO_MAX = 50;
/** Names looked at when searching for typos. */
const TYPO_CANDIDATES = 1000;
/**
 * Longest query (in words) still matched with typos. Every word must be near a word of the name, and names are a
 * few words long; a long query's trigrams are shared by nearly every name, so finding the candidates read them all
 * (a 200-character query: 620 ms on PostgreSQL over 100,000 users) for a list that could not match.
 */
export const TYPO_MAX_WORDS = 4;
/** Prefixes of /search/complete and what each searches; without one, users, networks and hashtags are mixed. */
export const COMPLETE_PREFIXES: Record<string, 'hashtag' | 'mention'> = { '#': 'hashtag', '@': 'mention' };

/** Query parameters shared by the searches. */
export interface SearchParams {
  query: string;
  offset?: number | undefined;
  page?: number | undefined;
  limit?: number | undefined;
  order?: string | undefined;
  language?: string | undefined;
  exclude_user_uuids?: unknown;
}

// biome-ignore lint/suspicious/noExplicitAny: items are the other modules' API objects, told apart by `type`.
type Item = any;

/** A search answer: the items and the applied window (`count.total` is always null on searches). */
export interface SearchResult<T> {
  data: T;
  count: { offset: number; limit: number; total: null };
}

function windowOf(ctx: Context, params: SearchParams): Window {
  return resolveWindow(params, ctx.config.SEARCH_MAX_OFFSET);
}

function result<T>(data: T, window: Window): SearchResult<T> {
  return { data, count: { offset: window.offset, limit: window.limit, total: null } };
}

function isHashtagQuery(query: string): boolean {
  return query.trimStart().startsWith('#');
}

/** The tag-store key of a hashtag query: the first word after the `#` signs, normalized like stored tags. */
function hashtagKey(query: string): string {
  const word = /[\p{L}\p{N}\p{M}_]+/u.exec(query.replace(/^[\s#]+/u, ''))?.[0] ?? '';
  return normalizeTagName(word);
}

/**
 * The username key a mention query starts: what follows the `@` signs, lower-cased like stored keys; empty when
 * it holds a character no username has (so nothing else, such as a NUL, ever reaches the database).
 */
function usernamePrefix(query: string): string {
  const prefix = query
    .replace(/^[\s@]+/u, '')
    .trim()
    .toLowerCase();
  return /^[\p{L}\p{N}_]+$/u.test(prefix) ? prefix : '';
}

/**
 * Appends typo-tolerant matches when the exact ones are fewer than TYPO_WHEN_FEWER_THAN, keeping one total order
 * (exact first) so paging still yields every item once. `fetchHead` gives the first TYPO_WHEN_FEWER_THAN exact
 * matches in order.
 */
async function withTypos<T>(
  window: Window,
  exactPage: T[],
  fetchHead: () => Promise<T[]>,
  fetchTypos: (exact: T[]) => Promise<T[]>,
): Promise<T[]> {
  // A page that reaches the TYPO_WHEN_FEWER_THAN-th exact match proves there are enough; with fewer, the list (those
  // plus at most TYPO_MAX typos) holds at most TYPO_WHEN_FEWER_THAN - 1 + TYPO_MAX items, so a page past them is the
  // exact page (empty then) either way. A deep page asks nothing more.
  if (exactPage.length > 0 && window.offset + exactPage.length >= TYPO_WHEN_FEWER_THAN) return exactPage;
  if (window.offset >= TYPO_WHEN_FEWER_THAN - 1 + TYPO_MAX) return exactPage;
  const head = window.offset === 0 && exactPage.length < window.limit ? exactPage : await fetchHead();
  if (head.length >= TYPO_WHEN_FEWER_THAN) return exactPage;
  const typos = await fetchTypos(head);
  return [...head, ...typos].slice(window.offset, window.offset + window.limit);
}

/** Names within the allowed edits of the query, best first: uuid to distance; hashtags only those `viewer` may see. */
async function typoMatches(
  ctx: Context,
  terms: string[],
  kinds: string[],
  viewer: string | null,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (
    kinds.length === 0 ||
    terms.length > TYPO_MAX_WORDS ||
    !terms.some((t) => allowedEdits([...t].length) > 0)
  ) {
    return out;
  }
  const candidates = await findNameCandidates(
    ctx.readDb,
    ctx.dialect,
    kinds,
    candidateTrigrams(terms),
    TYPO_CANDIDATES,
    viewer,
  );
  for (const c of candidates) {
    const d = typoDistance(terms, c.name);
    if (d === undefined) continue;
    const prev = out.get(c.uuid);
    if (prev === undefined || d < prev) out.set(c.uuid, d);
  }
  return out;
}

/** Documents in scope matching the query with typos (users and networks only), nearest first. */
async function docTypos(ctx: Context, terms: string[], scope: Scope, exact: DocRef[]): Promise<DocRef[]> {
  const kinds = scope.kinds.filter((k) => k === 'user' || k === 'network');
  const distances = await typoMatches(ctx, terms, kinds, scope.viewer);
  const known = new Set(exact.map((r) => r.uuid));
  const uuids = [...distances.entries()]
    .filter(([u]) => !known.has(u))
    .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, TYPO_MAX * 2)
    .map(([u]) => u);
  const refs = await findDocsInScope(ctx.readDb, uuids, scope);
  return refs
    .sort((a, b) => (distances.get(a.uuid) ?? 0) - (distances.get(b.uuid) ?? 0) || b.id - a.id)
    .slice(0, TYPO_MAX);
}

/** One search over the index: exact matches of the window, with typo-tolerant names when exact ones are few. */
async function searchDocs(
  ctx: Context,
  match: Match,
  scope: Scope,
  order: Order,
  window: Window,
  most = searchTuning.rankedCandidates,
) {
  if (match.terms.length === 0) return [];
  const counted = await withKindDocs(ctx, scope);
  const page = await exactDocs(ctx, match, counted, order, window, most);
  if (!scope.kinds.some((k) => k === 'user' || k === 'network')) return page;
  return withTypos(
    window,
    page,
    () => exactDocs(ctx, match, counted, order, { offset: 0, limit: TYPO_WHEN_FEWER_THAN }, most),
    (exact) => docTypos(ctx, match.terms, counted, exact),
  );
}

/**
 * Who may see a read row as of its text: a post's or media item's own audience, a comment's post's (read with it,
 * findRowsByUuids); undefined for the kinds no write hides (users, networks, messages between fixed parties).
 */
function audienceOf(
  kind: DocKind,
  row: Record<string, unknown>,
): { visibility: unknown; owner: unknown } | undefined {
  if (kind === 'post' || kind === 'media') return { visibility: row.visibility, owner: row.user_uuid };
  if (kind === 'comment') return { visibility: row.post_visibility, owner: row.post_owner };
  return undefined;
}

/**
 * The API objects of found documents, in the order found (items deleted meanwhile are left out, and so are posts,
 * comments and media the viewer may no longer see).
 */
async function hydrate(ctx: Context, viewer: string | null, refs: DocRef[]): Promise<Item[]> {
  return inOrder(refs, await readItems(ctx, viewer, refs));
}

/** The objects of `refs` that were read, in the order of `refs`. */
function inOrder(refs: DocRef[], objects: Map<string, Item>): Item[] {
  return refs.map((r) => objects.get(r.uuid)).filter((o) => o !== undefined);
}

/** The API objects of found documents by uuid, as hydrate keeps them. */
async function readItems(ctx: Context, viewer: string | null, refs: DocRef[]): Promise<Map<string, Item>> {
  const byKind = new Map<DocKind, string[]>();
  for (const r of refs) {
    const uuids = byKind.get(r.kind);
    if (uuids) uuids.push(r.uuid);
    else byKind.set(r.kind, [r.uuid]);
  }
  const objects = new Map<string, Item>();
  // One read per kind, all at once (PostgreSQL's connections, SQLite's reader threads): a mixed page read up to six
  // tables one after the other. On PostgreSQL concurrent searches share them (findDocRows).
  const kinds = [...byKind];
  const read = await Promise.all(kinds.map(([kind, uuids]) => findDocRows(ctx, kind, uuids)));
  // The walk checked visibility a statement before the rows were read: an edit committed between the two that both
  // rewrote and hid an item would put its new text here. So each row is checked again as read: public, or the
  // viewer's own, is kept; private (or friends-only, for a guest) is dropped; friends-only needs the friends table.
  // The friends test is against the owner each row was read with, not the item as it is by then.
  const friendsOnly = new Map<string, string>();
  kinds.forEach(([kind], i) => {
    for (const row of read[i] ?? []) {
      const audience = audienceOf(kind, row);
      const keep =
        audience === undefined ||
        audience.visibility === 'public' ||
        (viewer !== null && audience.owner === viewer);
      if (!keep && (viewer === null || audience?.visibility !== 'friends')) continue;
      if (!keep) friendsOnly.set(row.uuid as string, String(audience?.owner));
      objects.set(row.uuid as string, toItem(kind, row));
    }
  });
  if (viewer !== null && friendsOnly.size > 0) {
    const friends = await friendsAmong(ctx.readDb, ctx.dialect, viewer, [...new Set(friendsOnly.values())]);
    for (const [uuid, owner] of friendsOnly) if (!friends.has(owner)) objects.delete(uuid);
  }
  return objects;
}

function toItem(kind: DocKind, row: Record<string, unknown>): Item {
  switch (kind) {
    case 'user':
      return toPublicUser(row as unknown as UserTable);
    case 'network':
      return toNetwork(row as never);
    case 'post':
      return toPost(row as never);
    case 'comment':
      return toComment(row as never);
    case 'media':
      return toMedia(row as never);
    case 'messages':
      return toMessage(row as never);
  }
}

/**
 * Tag objects in the given order; `associations` holds only the newest associations whose target `viewer` may see
 * (as GET /tags gives them). The tag module keeps its mapper private, so its shape is repeated here.
 */
async function hydrateTags(ctx: Context, viewer: string | null, uuids: string[]): Promise<ApiTag[]> {
  const rows = (await findRowsByUuids(ctx.readDb, 'tag', uuids)) as Selectable<TagTable>[];
  const newest = await findNewestAssociationUuids(
    ctx.readDb,
    ctx.dialect,
    rows.map((r) => r.uuid),
    ASSOCIATIONS_IN_TAG,
    viewer,
  );
  const byUuid = new Map(
    rows.map((r): [string, ApiTag] => [
      r.uuid,
      {
        uuid: r.uuid,
        type: 'tag',
        name: r.name,
        tag_type: r.tag_type,
        associations: newest.get(r.uuid) ?? [],
        associations_count: Number(r.associations_count),
        created_at: r.created_at,
        updated_at: r.updated_at,
      },
    ]),
  );
  return uuids.map((u) => byUuid.get(u)).filter((t) => t !== undefined);
}

/**
 * Hashtags of the tag store visible to `viewer` by prefix of their key (ordered as asked), typo-tolerant when the
 * prefix finds few; a hashtag used only in content the viewer cannot see is never found, typo or not.
 */
async function hashtagUuids(
  ctx: Context,
  viewer: string | null,
  query: string,
  order: Order,
  window: Window,
  typos = true,
): Promise<string[]> {
  const key = hashtagKey(query);
  if (key === '') return [];
  const column = order.property as 'relevance' | 'created_at' | 'updated_at';
  const fetch = (offset: number, limit: number) =>
    findHashtagsByPrefix(ctx.readDb, viewer, key, { column, direction: order.direction }, offset, limit);
  const page = await fetch(window.offset, window.limit);
  if (!typos) return page;
  return withTypos(
    window,
    page,
    () => fetch(0, TYPO_WHEN_FEWER_THAN),
    async (exact) => {
      const terms = key.match(/[\p{L}\p{N}]+/gu) ?? [];
      // Visible to the viewer already: the candidates were chosen among the hashtags they may see.
      const distances = await typoMatches(ctx, terms, ['hashtag'], viewer);
      const known = new Set(exact);
      return [...distances.entries()]
        .filter(([u]) => !known.has(u))
        .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, TYPO_MAX)
        .map(([u]) => u);
    },
  );
}

/** The hashtags answering a `#` query (or any /search/hashtags query), as tag objects. */
async function findHashtags(
  ctx: Context,
  viewer: string | null,
  params: SearchParams,
): Promise<SearchResult<ApiTag[]>> {
  const order = parseOrder(params.order, CONTENT_ORDERS);
  const window = windowOf(ctx, params);
  return result(
    await hydrateTags(ctx, viewer, await hashtagUuids(ctx, viewer, params.query, order, window)),
    window,
  );
}

/** Users by uuid in the given order, as public user objects. */
async function hydrateUsers(ctx: Context, uuids: string[]): Promise<Item[]> {
  return hydrate(
    ctx,
    null,
    uuids.map((uuid, i) => ({ id: i, kind: 'user', uuid })),
  );
}

/** The words of a query, with a long last word's expansion read once for every statement of the search. */
async function matchOf(ctx: Context, params: SearchParams): Promise<Match> {
  return matchOfTerms(ctx, queryTerms(params.query), params.language);
}

async function matchOfTerms(ctx: Context, terms: string[], stem?: string): Promise<Match> {
  return { terms, stem, prefixWords: await expandPrefix(ctx.readDb, ctx.dialect, terms) };
}

function excludedUsers(raw: unknown): string[] | undefined {
  const details: ErrorDetail[] = [];
  const list = parseUuidList('exclude_user_uuids', raw, details);
  if (details.length > 0) {
    throw new ApiError(
      'invalid_request',
      `Invalid exclude_user_uuids: ${details.map((d) => d.message).join('; ')}. Give user uuids as exclude_user_uuids[]=UUID or one comma-separated string.`,
      details,
    );
  }
  return list;
}

/** Items an answer holds: what it weighs in the answer cache. */
function itemCount(answer: SearchResult<unknown>): number {
  const data = answer.data;
  if (Array.isArray(data)) return data.length;
  return Object.values(data as Record<string, unknown[]>).reduce((n, list) => n + list.length, 0);
}

/**
 * The answer of one search operation, from the exact answer cache when the database has not changed since it was
 * computed (src/db/exact-cache.ts), else computed. Keyed by operation, viewer, the request's parameters and the
 * tuning. `options.fresh` (the request said `Cache-Control: no-cache`) computes anew and stores the answer for later
 * requests; the cache keeps it as `options.render` made it (the route's serialized envelope), so an answer served
 * again is not serialized again.
 */
export async function cachedAnswer<T, A>(
  ctx: Context,
  operation: string,
  viewer: string | null,
  params: object,
  options: AnswerOptions<SearchResult<T>, A>,
  compute: () => Promise<SearchResult<T>>,
): Promise<A> {
  const scope = {
    ...readCacheScope(ctx, options.version),
    capacity: ctx.config.SEARCH_CACHE_ITEMS,
    maxBytes: ctx.config.SEARCH_CACHE_MB * 2 ** 20,
  };
  const key = JSON.stringify([
    operation,
    viewer,
    params,
    searchTuning.rankedCandidates,
    searchTuning.recentDocs,
  ]);
  const rendered = async (gone: () => boolean) => {
    const found = await heavyRead(ctx, compute, gone);
    return { answer: options.render(found), weight: itemCount(found) };
  };
  return (await cachedRead(scope, 'search', key, options.fresh, rendered, (v) => v.weight, options.abandoned))
    .answer;
}

/** GET /search: mixed kinds ranked together; a `#` query searches hashtags in the tag store instead. */
export async function search(
  ctx: Context,
  viewer: string | null,
  params: SearchParams,
): Promise<SearchResult<Item[]>> {
  if (isHashtagQuery(params.query)) return findHashtags(ctx, viewer, params);
  const order = parseOrder(params.order, CONTENT_ORDERS);
  const window = windowOf(ctx, params);
  const scope: Scope = { kinds: DOC_KINDS, viewer, language: params.language };
  const refs = await searchDocs(ctx, await matchOf(ctx, params), scope, order, window);
  return result(await hydrate(ctx, viewer, refs), window);
}

/** GET /search/types: one column per kind (every kind present), each up to `limit`; `#` gives { tag }. */
export async function searchTypes(
  ctx: Context,
  viewer: string | null,
  params: SearchParams,
): Promise<SearchResult<Record<string, Item[]>>> {
  if (isHashtagQuery(params.query)) {
    const tags = await findHashtags(ctx, viewer, params);
    return { data: { tag: tags.data }, count: tags.count };
  }
  const order = parseOrder(params.order, CONTENT_ORDERS);
  const window = windowOf(ctx, params);
  const match = await matchOf(ctx, params);
  // Independent per kind: they run at once on PostgreSQL's connections and SQLite's reader threads.
  const found = await Promise.all(
    DOC_KINDS.map((kind) => {
      const scope: Scope = { kinds: [kind], viewer, language: params.language };
      // A column of each kind is a preview: it ranks at most the common-query depth (see docs/search.md).
      const most = Math.ceil(searchTuning.rankedCandidates / 5);
      return searchDocs(ctx, match, scope, order, window, most);
    }),
  );
  // Read together: one read per kind still, but one friends check for the whole answer rather than one per column.
  const objects = await readItems(ctx, viewer, found.flat());
  const columns = DOC_KINDS.map((kind, i) => [kind, inOrder(found[i] ?? [], objects)] as const);
  return result(Object.fromEntries(columns), window);
}

/** GET /search/users and /search/friends (friendsOf: only the caller's confirmed friends). */
export async function searchUsers(
  ctx: Context,
  viewer: string | null,
  params: SearchParams,
  friendsOnly: boolean,
): Promise<SearchResult<Item[]>> {
  const order = parseOrder(params.order, USER_ORDERS);
  const excludeUuids = excludedUsers(params.exclude_user_uuids);
  const window = windowOf(ctx, params);
  const scope: Scope = {
    kinds: ['user'],
    viewer,
    language: params.language,
    excludeUuids,
    friendsOf: friendsOnly ? (viewer ?? undefined) : undefined,
  };
  const refs = await searchDocs(ctx, await matchOf(ctx, params), scope, order, window);
  return result(await hydrate(ctx, viewer, refs), window);
}

/** GET /search/networks. */
export async function searchNetworks(
  ctx: Context,
  viewer: string | null,
  params: SearchParams,
): Promise<SearchResult<Item[]>> {
  const order = parseOrder(params.order, CONTENT_ORDERS);
  const window = windowOf(ctx, params);
  const scope: Scope = { kinds: ['network'], viewer };
  const refs = await searchDocs(ctx, await matchOf(ctx, params), scope, order, window);
  return result(await hydrate(ctx, viewer, refs), window);
}

/** GET /search/hashtags: hashtags of the tag store visible to the viewer by prefix (with or without `#`), typo-tolerant. */
export async function searchHashtags(
  ctx: Context,
  viewer: string | null,
  params: SearchParams,
): Promise<SearchResult<Item[]>> {
  return findHashtags(ctx, viewer, params);
}

/** Users to mention by username prefix: the caller's friends first, then others; the caller left out. */
async function mentionUuids(ctx: Context, viewer: string | null, query: string, window: Window) {
  const prefix = usernamePrefix(query);
  if (prefix === '') return [];
  const exclude = viewer ? [viewer] : [];
  const fetch = async (offset: number, limit: number): Promise<string[]> => {
    if (!viewer) {
      return findUsersByUsernamePrefix(ctx.readDb, prefix, { offset, limit, exclude });
    }
    const friends = await findUsersByUsernamePrefix(ctx.readDb, prefix, {
      friendsOf: viewer,
      offset: 0,
      limit: offset + limit,
    });
    const page = friends.slice(offset, offset + limit);
    if (friends.length >= offset + limit) return page;
    const others = await findUsersByUsernamePrefix(ctx.readDb, prefix, {
      notFriendsOf: viewer,
      exclude,
      offset: Math.max(0, offset - friends.length),
      limit: limit - page.length,
    });
    return [...page, ...others];
  };
  const page = await fetch(window.offset, window.limit);
  return withTypos(
    window,
    page,
    () => fetch(0, TYPO_WHEN_FEWER_THAN),
    async (exact) => {
      // A username's parts (`a_b_c`): a name of more parts than a query may have words finds no near match.
      const terms = textTerms(prefix).slice(0, MAX_TERMS);
      const scope: Scope = { kinds: ['user'], viewer, excludeUuids: [...exclude, ...exact] };
      return (await docTypos(ctx, terms, scope, [])).map((r) => r.uuid);
    },
  );
}

/** GET /search/mentions. */
export async function searchMentions(
  ctx: Context,
  viewer: string,
  params: SearchParams,
): Promise<SearchResult<Item[]>> {
  const window = windowOf(ctx, params);
  return result(await hydrateUsers(ctx, await mentionUuids(ctx, viewer, params.query, window)), window);
}

/**
 * GET /search/complete: the prefix picks the kind (COMPLETE_PREFIXES); without one, users (username prefix),
 * networks (name words by prefix) and hashtags (key prefix) take turns. Only indexed prefix lookups: no ranking.
 */
export async function complete(
  ctx: Context,
  viewer: string | null,
  params: { query: string; limit?: number | undefined },
): Promise<SearchResult<Item[]>> {
  const limit = Math.min(params.limit ?? COMPLETE_MAX, COMPLETE_MAX);
  const window: Window = { offset: 0, limit };
  const kind = COMPLETE_PREFIXES[params.query.trimStart().charAt(0)];
  const byRelevance: Order = { property: 'relevance', direction: 'desc' };
  if (kind === 'hashtag') {
    const uuids = await hashtagUuids(ctx, viewer, params.query, byRelevance, window, false);
    return result(await hydrateTags(ctx, viewer, uuids), window);
  }
  if (kind === 'mention') {
    return result(await hydrateUsers(ctx, await mentionUuids(ctx, viewer, params.query, window)), window);
  }
  const terms = queryTerms(params.query);
  if (terms.length === 0) return result([], window);
  const prefix = usernamePrefix(fold(params.query));
  // The three lookups and then their rows are read at once: each is a round trip on PostgreSQL and a reader thread's
  // read on SQLite, and a completion answers while someone types.
  const [userItems, networkItems, tagItems] = await Promise.all([
    (prefix !== ''
      ? findUsersByUsernamePrefix(ctx.readDb, prefix, { offset: 0, limit })
      : Promise.resolve([])
    ).then((users) => hydrateUsers(ctx, users)),
    matchOfTerms(ctx, terms)
      .then((match) =>
        findMatchesById(
          ctx.readDb,
          ctx.dialect,
          match,
          { kinds: ['network'], viewer },
          { direction: 'desc', offset: 0, limit },
        ),
      )
      .then((networks) => hydrate(ctx, null, networks)),
    hashtagUuids(ctx, viewer, params.query, byRelevance, window, false).then((tags) =>
      hydrateTags(ctx, viewer, tags),
    ),
  ]);
  const mixed: Item[] = [];
  for (let i = 0; mixed.length < limit && i < limit; i++) {
    for (const list of [userItems, networkItems, tagItems]) {
      const item = list[i];
      if (item !== undefined && mixed.length < limit) mixed.push(item);
    }
  }
  return result(mixed, window);
}

/** Rebuilds the search index from the base tables (the `search reindex` command). */
export async function reindex(ctx: Context): Promise<{ docs: number; names: number }> {
  return ctx.db.transaction().execute((trx) => rebuildIndex(trx, ctx.dialect));
}

/** Search documents that differ from their items, at most `limit` (the `check` command). */
export async function checkSearchIndex(db: Db, limit: number): Promise<IndexMismatch[]> {
  return findIndexMismatches(db, limit);
}

/** Compacts the search index (the `search compact` command; docs/search.md, "Keeping the index compact"). */
export async function compactSearchIndex(ctx: Context): Promise<{ steps: number }> {
  return { steps: await compactIndex(ctx.db, ctx.dialect, searchTuning.recentDocs) };
}
