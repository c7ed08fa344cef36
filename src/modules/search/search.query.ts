import {
  LANGUAGE_TOKEN_PREFIX,
  VISIBILITY_TOKEN_PREFIX,
} from '../../db/migrations/0030-search-scope-tokens.ts';
import { RESTRICTED_VISIBILITIES } from '../../db/migrations/0031-search-restricted-index.ts';
import { foldText } from '../../db/search-fold.ts';
import { decodeTextStats, textStats } from '../../db/search-stats.ts';
import { ApiError } from '../../http/errors.ts';

/**
 * Most words a query may hold (200 characters rarely hold more). Every word must match, so a query with more is
 * refused rather than matched on its first words only.
 */
export const MAX_TERMS = 16;

/**
 * Case and diacritics folding, exactly what both engines index (src/db/search-fold.ts): NFKC, lower case, ß as ss,
 * combining marks removed.
 */
export const fold = foldText;

/** The words of a text, folded and split as queryTerms splits a query, without its limit (a name's parts). */
export function textTerms(text: string): string[] {
  return fold(text).match(/[\p{L}\p{N}]+/gu) ?? [];
}

/**
 * The words of a query: folded, split at everything that is not a letter or digit. Quotes, operators and engine
 * syntax never survive this step, so nothing the user types is ever interpreted by FTS5 or tsquery.
 */
export function queryTerms(query: string): string[] {
  const terms = textTerms(query);
  if (terms.length > MAX_TERMS) {
    const message = `query holds ${terms.length} words; at most ${MAX_TERMS} are allowed, as every word must match`;
    throw new ApiError('invalid_request', `Invalid query: ${message}.`, [{ field: 'query', message }]);
  }
  return terms;
}

/**
 * Shortest last word that matches as a prefix. A single letter would match most of the index (every word starting
 * with it: 60% of the documents of a Zipf world) and no index serves it (FTS5's prefix indexes start at 2
 * characters; GIN merges every lexeme with that start), so a one-character last word matches as a whole word.
 */
export const MIN_PREFIX = 2;

/** Whether term `i` of `terms` matches as a prefix: the last one, from MIN_PREFIX characters. */
export function isPrefixTerm(terms: string[], i: number): boolean {
  return i === terms.length - 1 && [...(terms[i] ?? '')].length >= MIN_PREFIX;
}

/**
 * Which documents an FTS5 match keeps: of the kinds only some, or all but some; of the messages, only those of `party`
 * if given; of the posts, comments and media, only public ones if `publicOnly`; of the content, only that in
 * `language` if given (users and networks have none and are kept). The last two read the scope tokens of migration
 * 0030.
 */
export interface FtsKinds {
  only?: readonly string[] | undefined;
  except?: readonly string[] | undefined;
  /** A partyToken: messages are kept only when it is one of their two parties. */
  party?: string | undefined;
  publicOnly?: boolean | undefined;
  language?: string | undefined;
}

/**
 * The token of a user as a party of a message in the FTS5 `kind` column (SQLite, migration 0020): `u` and the uuid
 * without its dashes, one token for the tokenizer. The migration's triggers write the same from the row.
 */
export function partyToken(userUuid: string): string {
  return `u${userUuid.replaceAll('-', '').toLowerCase()}`;
}

/** Longest prefix the plain FTS5 index has a prefix index for (migration 0002-search: prefix='2 3 4 5'). */
export const LONGEST_PREFIX_INDEX = 5;

const quoted = (word: string) => `"${word.replaceAll('"', '""')}"`;

/**
 * FTS5 MATCH text: every term must match (in title or body), the last one as a prefix (isPrefixTerm) unless
 * `lastPrefix` is false (the stemmed index matches whole words); each term quoted, so nothing in it is FTS5 syntax.
 * `prefixWords`, when given and not empty, are the indexed words the last term is a prefix of (expandPrefix in the
 * repository): the prefix is then matched as these whole words, which FTS5 reads lazily, instead of a prefix query.
 * `kinds` filters on the kind column inside the index, which skips the other documents without reading them.
 */
export function ftsMatch(
  terms: string[],
  kinds: FtsKinds = {},
  lastPrefix = true,
  prefixWords?: readonly string[],
): string {
  let text = wordsMatch(terms, lastPrefix, prefixWords);
  const messagesOnly = kinds.only?.length === 1 && kinds.only[0] === 'messages';
  const withMessages = kinds.only ? kinds.only.includes('messages') : !kinds.except?.includes('messages');
  if (kinds.party && messagesOnly) {
    text = `kind : ${quoted(kinds.party)} AND ${text}`;
  } else {
    if (kinds.only) text = `${kindList(kinds.only)} AND ${text}`;
    if (kinds.except && kinds.except.length > 0) text = `${text} NOT ${kindList(kinds.except)}`;
    // Only messages carry party tokens: the other kinds pass, and of the messages those of the party.
    if (kinds.party && withMessages) {
      text = `${text} NOT (kind : "messages" NOT kind : ${quoted(kinds.party)})`;
    }
  }
  if (kinds.publicOnly) {
    // Users and networks carry no visibility token and are public: NOT keeps them, where `vpublic` would not.
    const hidden = RESTRICTED_VISIBILITIES.map((v) => `kind : ${quoted(VISIBILITY_TOKEN_PREFIX + v)}`);
    text = `${text} NOT ${hidden.join(' NOT ')}`;
  }
  if (kinds.language) {
    const token = `kind : ${quoted(LANGUAGE_TOKEN_PREFIX + kinds.language)}`;
    const languageless = NO_LANGUAGE_KINDS.filter((k) =>
      kinds.only ? kinds.only.includes(k) : !kinds.except?.includes(k),
    );
    const kept =
      languageless.length === 0
        ? token
        : `(${[token, ...languageless.map((k) => `kind : "${k}"`)].join(' OR ')})`;
    text = `${text} AND ${kept}`;
  }
  return text;
}

/** An FTS5 filter on the kind column keeping any of `kinds`. */
function kindList(kinds: readonly string[]): string {
  return `kind : (${kinds.map((x) => `"${x}"`).join(' OR ')})`;
}

/** The words of ftsMatch: every term in title or body, the last as a prefix unless `lastPrefix` is false. */
function wordsMatch(terms: string[], lastPrefix: boolean, prefixWords?: readonly string[]): string {
  const words = terms.map((t, i) => {
    if (!lastPrefix || !isPrefixTerm(terms, i)) return quoted(t);
    if (prefixWords && prefixWords.length > 0) return `(${prefixWords.map(quoted).join(' OR ')})`;
    return `${quoted(t)}*`;
  });
  return `{title body} : (${words.join(' AND ')})`;
}

/**
 * Kinds whose documents carry a visibility token (migration 0030); users and networks are public, messages are seen
 * by their parties.
 */
export const VISIBILITY_TOKEN_KINDS: readonly string[] = ['post', 'comment', 'media'];

/**
 * FTS5 MATCH text of the friends-only and private posts, comments and media among a query's matches (the words as
 * ftsMatch writes them), of `kinds`: the matches a signed-in caller's deep walk checks row by row (restrictedApartIds
 * in search-walk.repository.ts). Other kinds are left to that check, which finds no such document among them; the
 * language, too, is left to it: the language token's doclist holds most of the index, and intersecting it cost more
 * than reading the language beside the owner in the index of those documents (migration 0032). Which doclist leads
 * sets the cost (docs/search.md, "Signed-in deep pages (SQLite)"): with posts among the kinds, the two restricted
 * visibility tokens; without, in a range `bounded` by the page's public matches, the words, skipping the public token
 * (the restricted tokens would step through every friends-only post); without and unbounded, the kinds' tokens (the
 * words would step through every match of the index).
 */
export function ftsRestrictedMatch(
  terms: string[],
  kinds: readonly string[],
  bounded: boolean,
  lastPrefix = true,
  prefixWords?: readonly string[],
): string {
  const words = wordsMatch(terms, lastPrefix, prefixWords);
  const visibility = (v: string) => `kind : ${quoted(VISIBILITY_TOKEN_PREFIX + v)}`;
  const restricted = `(${RESTRICTED_VISIBILITIES.map(visibility).join(' OR ')})`;
  const owned = VISIBILITY_TOKEN_KINDS.filter((k) => kinds.includes(k));
  const others = VISIBILITY_TOKEN_KINDS.filter((k) => !kinds.includes(k))
    .map((k) => ` NOT kind : "${k}"`)
    .join('');
  // mayHaveMoreThan (search-density.repository.ts) also tells the posts' walks apart from the sparser kinds'.
  if (kinds.includes('post')) return `${words} AND ${restricted}${others}`;
  if (bounded) return `${words} NOT ${visibility('public')}${others}`;
  return `${kindList(owned)} AND ${words} AND ${restricted}`;
}

/** Kinds a language limit does not apply to (docs/http.md): their documents carry no language token. */
const NO_LANGUAGE_KINDS = ['user', 'network'] as const;

/** Sort direction. */
export type Direction = 'asc' | 'desc';

/** A parsed `order` parameter. */
export interface Order {
  property: string;
  direction: Direction;
}

/** Parses `PROPERTY`, `PROPERTY:asc|desc` or `PROPERTY asc|desc`; an unknown property or direction is a 400. */
export function parseOrder(raw: string | undefined, allowed: readonly string[]): Order {
  if (raw === undefined || raw.trim() === '') return { property: 'relevance', direction: 'desc' };
  const m = /^\s*([a-z_]+)(?:\s*[: ]\s*([A-Za-z]+))?\s*$/.exec(raw);
  const property = m?.[1];
  const direction = (m?.[2] ?? 'desc').toLowerCase();
  if (!m || !property || !allowed.includes(property) || (direction !== 'asc' && direction !== 'desc')) {
    const message = `order is PROPERTY, PROPERTY:asc|desc or "PROPERTY asc|desc" with PROPERTY one of ${allowed.join(', ')}; got ${JSON.stringify(raw.slice(0, 60))}`;
    throw new ApiError('invalid_request', `Invalid order: ${message}`, [{ field: 'order', message }]);
  }
  return { property, direction: direction as Direction };
}

/** Trigrams of a folded text with pg_trgm's padding (two blanks before each word, one after). */
export function trigrams(text: string): Set<string> {
  const out = new Set<string>();
  for (const word of text.match(/[\p{L}\p{N}]+/gu) ?? []) {
    const w = `  ${word} `;
    const chars = [...w];
    for (let i = 0; i + 3 <= chars.length; i++) out.add(chars.slice(i, i + 3).join(''));
  }
  return out;
}

/** The trigrams that look up typo candidates: one blank before and after each word, as search_names stores names. */
export function candidateTrigrams(terms: string[]): string[] {
  const out = new Set<string>();
  for (const t of terms) {
    const chars = [...` ${t} `];
    for (let i = 0; i + 3 <= chars.length; i++) out.add(chars.slice(i, i + 3).join(''));
  }
  return [...out].slice(0, 64);
}

/** Optimal string alignment distance (Levenshtein plus swaps of neighbours), stopping early above `max`. */
export function editDistance(a: string, b: string, max: number): number {
  const s = [...a];
  const t = [...b];
  if (Math.abs(s.length - t.length) > max) return max + 1;
  const rows: number[][] = [];
  for (let i = 0; i <= s.length; i++) {
    const row = new Array<number>(t.length + 1).fill(0);
    row[0] = i;
    rows.push(row);
  }
  const r0 = rows[0] as number[];
  for (let j = 0; j <= t.length; j++) r0[j] = j;
  for (let i = 1; i <= s.length; i++) {
    const row = rows[i] as number[];
    const prev = rows[i - 1] as number[];
    let best = Number.POSITIVE_INFINITY;
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let v = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) {
        v = Math.min(v, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      }
      row[j] = v;
      if (v < best) best = v;
    }
    if (best > max) return max + 1;
  }
  return (rows[s.length] as number[])[t.length] as number;
}

/** Edits a word of this length may contain and still count as a typo (0 up to 3 letters, 1 up to 6, else 2). */
export function allowedEdits(length: number): number {
  if (length <= 3) return 0;
  if (length <= 6) return 1;
  return 2;
}

/**
 * How far a name is from a query typed with typos, or undefined when it is too far: every query word must be
 * within its allowed edits of a word of the name (or of that word's start, for the last query word).
 */
export function typoDistance(terms: string[], name: string): number | undefined {
  const words = fold(name).match(/[\p{L}\p{N}]+/gu) ?? [];
  if (terms.length === 0 || words.length === 0) return undefined;
  let total = 0;
  for (const [i, term] of terms.entries()) {
    const max = allowedEdits([...term].length);
    const last = i === terms.length - 1;
    let best = max + 1;
    for (const w of words) {
      best = Math.min(best, editDistance(term, w, max));
      if (last && [...w].length > [...term].length) {
        best = Math.min(best, editDistance(term, [...w].slice(0, [...term].length).join(''), max));
      }
    }
    if (best > max) return undefined;
    total += best;
  }
  return total;
}

const K1 = 1.2;
const B = 0.75;
/** How much more a word in the title (name) counts than one in the body. */
const TITLE_WEIGHT = 3;

/** BM25 saturation and length normalization of one field. */
function fieldScore(tf: number[], length: number, averageLength: number): number {
  if (length === 0) return 0;
  let score = 0;
  for (const f of tf) {
    if (f > 0) score += (f * (K1 + 1)) / (f + K1 * (1 - B + (B * length) / averageLength));
  }
  return score;
}

/**
 * A candidate document's text, for relevance; `stats`, when its engine computed them beside the row (SQLite's
 * search_stats), stand for the text (src/db/search-stats.ts).
 */
export interface ScoredText {
  title: string | null;
  body: string | null;
  stats?: string | undefined;
}

/**
 * BM25-style relevance of each candidate (higher is better), computed from the candidates' text so both engines rank
 * alike. Every candidate contains every term (the index matched them), so document frequencies would weigh all
 * candidates alike and are left out; term frequency and field length decide, titles weigh more.
 */
export function relevanceScores(terms: string[], docs: ScoredText[]): number[] {
  const stats = docs.map((d) =>
    d.stats === undefined ? textStats(terms, d.title, d.body) : decodeTextStats(d.stats, terms.length),
  );
  const n = Math.max(1, stats.length);
  const avgTitle = Math.max(1, stats.reduce((sum, f) => sum + f.title, 0) / n);
  const avgBody = Math.max(1, stats.reduce((sum, f) => sum + f.body, 0) / n);
  return stats.map(
    (f) => TITLE_WEIGHT * fieldScore(f.titleTf, f.title, avgTitle) + fieldScore(f.bodyTf, f.body, avgBody),
  );
}
