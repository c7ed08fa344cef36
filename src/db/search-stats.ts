import { foldText } from './search-fold.ts';
import { readWholeNumbers } from './whole-numbers.ts';

/**
 * What relevance needs of a document's text (search.query.ts, relevanceScores): how many words each field has and
 * how much each query term matches them. SQLite computes it beside the rows (the SQL function search_stats,
 * registered on every connection by the driver), so a reader thread reads the text and the event loop receives a
 * few numbers per candidate instead of the text; PostgreSQL's rows carry the text, and the process computes it.
 */
export interface TextStats {
  /** Words in the title. */
  title: number;
  /** Words in the body. */
  body: number;
  /** Per term, how much it matches the title's words (1 per exact word, 0.5 per prefix or stem-like variant). */
  titleTf: number[];
  /** The same for the body. */
  bodyTf: number[];
}

/** The statistics of a title and body for folded query terms. */
export function textStats(terms: readonly string[], title: string | null, body: string | null): TextStats {
  const titleTf = terms.map(() => 0);
  const bodyTf = terms.map(() => 0);
  return { title: fieldStats(title, terms, titleTf), body: fieldStats(body, terms, bodyTf), titleTf, bodyTf };
}

/**
 * TextStats as one text of whole numbers, blank-separated: the two word counts, then each term's title and body
 * matches in halves (a match counts 1 or 0.5, so twice a sum is whole), which decodeTextStats reads without
 * splitting the text or parsing a fraction.
 */
export function encodeTextStats(stats: TextStats): string {
  let text = `${stats.title} ${stats.body}`;
  for (const f of stats.titleTf) text += ` ${f * 2}`;
  for (const f of stats.bodyTf) text += ` ${f * 2}`;
  return text;
}

/**
 * The TextStats of an encodeTextStats text for `termCount` terms, read digit by digit (a search decodes up to 1,000
 * of them on the event loop). Throws when the text holds another number of terms, the statistics computed for other
 * terms than those they are scored with, or anything but digits and blanks.
 */
export function decodeTextStats(text: string, termCount: number): TextStats {
  const values = readWholeNumbers(
    text,
    ' ',
    (c) => `text statistics hold ${c}: only whole numbers are written`,
  );
  if (values.length !== 2 + 2 * termCount) {
    throw new Error(`text statistics for ${(values.length - 2) / 2} terms scored with ${termCount}`);
  }
  const titleTf = new Array<number>(termCount);
  const bodyTf = new Array<number>(termCount);
  for (let j = 0; j < termCount; j++) {
    titleTf[j] = (values[2 + j] as number) / 2;
    bodyTf[j] = (values[2 + termCount + j] as number) / 2;
  }
  return { title: values[0] as number, body: values[1] as number, titleTf, bodyTf };
}

// The terms text of the last search_stats call, split: every row of one query passes the same terms.
let lastTerms = '';
let lastSplit: string[] = [];

/**
 * search_stats(terms, title, body) of SQL: the encoded TextStats of a document for blank-separated folded terms
 * (query terms are letters and digits only, so a blank never falls inside one).
 */
export function searchStatsFunction(terms: unknown, title: unknown, body: unknown): string {
  const text = String(terms ?? '');
  if (text !== lastTerms) {
    lastTerms = text;
    lastSplit = text === '' ? [] : text.split(' ');
  }
  return encodeTextStats(
    textStats(lastSplit, title === null ? null : String(title), body === null ? null : String(body)),
  );
}

// Folding changes nothing in ASCII text but its case, so most texts skip the Unicode normalizations. A search
// ranks up to 1,000 texts per request: without the `u` flag the test is a plain scan of code units (a third of the
// ranking's time went to it with \p{ASCII}).
const NOT_ASCII = /[\u0080-\uffff]/;

/** The folded words of a text (other than ASCII: fieldStats scans those itself). */
function foldedWords(text: string): string[] {
  return foldText(text).match(/[\p{L}\p{N}]+/gu) ?? [];
}

/**
 * How well one word of a document matches a query term: 1 exact, 0.5 a prefix or stem-like variant (the term
 * continues the word, from 3 characters), else 0. The word is `text.slice(from, to)`, read in place, its ASCII
 * capitals as lower case; `term` is folded (lower case).
 */
function wordMatch(text: string, from: number, to: number, term: string): number {
  const length = to - from;
  const compared = Math.min(length, term.length);
  if (length < term.length && length < 3) return 0;
  for (let k = 0; k < compared; k++) {
    if (lowerAscii(text.charCodeAt(from + k)) !== term.charCodeAt(k)) return 0;
  }
  return length === term.length ? 1 : 0.5;
}

/** An ASCII capital's lower case; any other code unit as it is. */
function lowerAscii(c: number): number {
  return c >= 65 && c <= 90 ? c + 32 : c;
}

/** Whether a code unit is an ASCII letter (either case) or digit: what an ASCII text's words are made of. */
function isAsciiWordChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57);
}

/**
 * The words of a field and how much each term matches them (wordMatch summed over the words, added to `tf`): one
 * pass over the characters of an ASCII text, no string built; the folded words of any other.
 */
function fieldStats(text: string | null, terms: readonly string[], tf: number[]): number {
  if (!text) return 0;
  if (NOT_ASCII.test(text)) {
    const list = foldedWords(text);
    for (const w of list) {
      for (let j = 0; j < terms.length; j++)
        tf[j] = (tf[j] ?? 0) + wordMatch(w, 0, w.length, terms[j] as string);
    }
    return list.length;
  }
  const end = text.length;
  let count = 0;
  let i = 0;
  while (i < end) {
    while (i < end && !isAsciiWordChar(text.charCodeAt(i))) i++;
    if (i === end) break;
    const from = i;
    while (i < end && isAsciiWordChar(text.charCodeAt(i))) i++;
    count++;
    for (let j = 0; j < terms.length; j++)
      tf[j] = (tf[j] ?? 0) + wordMatch(text, from, i, terms[j] as string);
  }
  return count;
}
