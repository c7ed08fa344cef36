/**
 * The one text folding of search, shared by the query (search.query.ts), SQLite's index (registered as the SQL
 * function search_fold on every connection) and mirrored by PostgreSQL's search_fold() (migration 0003): NFKC
 * (ligatures, full-width and other compatibility forms), lower case, the two letters whose lower case differs by
 * engine or stemmer folded to one spelling (ß to ss as German writes it without ß, final ς to σ), combining marks
 * removed (NFD), NFC again. A text of Latin letters alone is folded from a table (foldLatin), the same result.
 */
export function foldText(text: string): string {
  return foldLatin(text) ?? foldByNormalization(text);
}

/** foldText as its definition says, one normalization after the other. */
export function foldByNormalization(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/ß/gu, 'ss')
    .replace(/ς/gu, 'σ')
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .normalize('NFC');
}

/**
 * Below U+0250 (ASCII and the Latin blocks of the Western and Central European languages) no code unit combines
 * with a neighbour under NFKC or NFD (the combining marks start at U+0300), and lower case maps each alone (the one
 * rule that reads its neighbours, Greek's final sigma, is above): such a code unit folds to the same text alone as
 * inside any text (test/search/folding-table.test.ts checks every pair). Each one's folding, undefined where it is
 * the code unit itself.
 */
export const LATIN_FOLD_END = 0x250;
const LATIN_FOLDS: (string | undefined)[] = Array.from({ length: LATIN_FOLD_END }, (_, c) => {
  const alone = String.fromCharCode(c);
  const folded = foldByNormalization(alone);
  return folded === alone ? undefined : folded;
});

/**
 * foldText of a text whose code units are all below LATIN_FOLD_END, one code unit at a time (a fifth of the time of
 * the normalizations on the seeded world's German and French posts); undefined for any other text. Searches fold
 * each ranked candidate, and every indexed text is folded on write.
 */
function foldLatin(text: string): string | undefined {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= LATIN_FOLD_END) return undefined;
    const folded = LATIN_FOLDS[c];
    if (folded !== undefined) {
      out += text.slice(from, i) + folded;
      from = i + 1;
    }
  }
  return from === 0 ? text : out + text.slice(from);
}

/** foldText with every run of characters other than letters and digits made one blank: what the indexes store. */
export function foldForIndex(text: string | null): string | null {
  return text === null ? null : foldText(text).replace(/[^\p{L}\p{N}]+/gu, ' ');
}

/**
 * foldForIndex as a PostgreSQL expression of the text `t`, step by step as foldByNormalization (NFKC, lower case, ß
 * and final ς, NFD, the marks removed, NFC), then every run of non-alphanumerics made a blank. The body of
 * search_fold() since migration 0003; migration 0029 keeps it for text that is not ASCII alone.
 */
export function foldStepsForPostgres(): string {
  return `regexp_replace(
         normalize(regexp_replace(normalize(
           replace(replace(lower(normalize(coalesce(t, ''), NFKC)), 'ß', 'ss'), 'ς', 'σ'),
         NFD), '${markClassForPostgres()}', '', 'g'), NFC),
         '[^[:alnum:]]+', ' ', 'g')`;
}

/**
 * The combining marks (\p{M}) as a PostgreSQL regular expression bracket expression, so PostgreSQL removes exactly
 * the marks JavaScript does.
 */
export function markClassForPostgres(): string {
  const mark = /\p{M}/u;
  const ranges: [number, number][] = [];
  for (let cp = 0; cp <= 0xe01ef; cp++) {
    if (!mark.test(String.fromCodePoint(cp))) continue;
    const last = ranges[ranges.length - 1];
    if (last && last[1] === cp - 1) last[1] = cp;
    else ranges.push([cp, cp]);
  }
  const esc = (cp: number) =>
    cp > 0xffff ? `\\U${cp.toString(16).padStart(8, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`;
  return `[${ranges.map(([a, b]) => (a === b ? esc(a) : `${esc(a)}-${esc(b)}`)).join('')}]`;
}
