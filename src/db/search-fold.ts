/**
 * The one text folding of search, shared by the query (search.query.ts), SQLite's index (registered as the SQL
 * function search_fold on every connection) and mirrored by PostgreSQL's search_fold() (migration 0003): NFKC
 * (ligatures, full-width and other compatibility forms), lower case, the two letters whose lower case differs by
 * engine or stemmer folded to one spelling (ß to ss as German writes it without ß, final ς to σ), combining marks
 * removed (NFD), NFC again.
 */
export function foldText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/ß/gu, 'ss')
    .replace(/ς/gu, 'σ')
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .normalize('NFC');
}

/** foldText with every run of characters other than letters and digits made one blank: what the indexes store. */
export function foldForIndex(text: string | null): string | null {
  return text === null ? null : foldText(text).replace(/[^\p{L}\p{N}]+/gu, ' ');
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
