// PostgreSQL's statistics of the index's words: how many documents held each common lexeme when search_docs was last
// analyzed, which tells a rare word without counting its matches (docs/search.md, "Rare words by the statistics").
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/** When search_docs was last analyzed (null: never, or its statistics reset) and how many rows changed since. */
export interface StatsFreshness {
  analyzedAt: string | null;
  changedSince: number;
}

/** PostgreSQL: when search_docs was last analyzed, by hand or by autovacuum (the server's activity statistics). */
export function lastAnalyzedAt(): RawBuilder<unknown> {
  return sql`greatest(pg_stat_get_last_analyze_time('search_docs'::regclass),
    pg_stat_get_last_autoanalyze_time('search_docs'::regclass))`;
}

/**
 * The commonest lexemes of search_docs at the last ANALYZE: each one's share of the documents, the smallest
 * share kept (every lexeme left out held at most about that share), and the documents then.
 */
export interface LexemeStats {
  freqs: ReadonlyMap<string, number>;
  minFreq: number;
  rows: number;
}

/**
 * PostgreSQL: the most common lexemes of search_docs (the elements of `tsvector_to_array(tsv)`, whose statistics
 * migration 0033 keeps; pg_stats_ext_exprs) with their frequencies, and the table's rows as analyzed (null when not
 * analyzed yet, or too few lexemes to list any), with how long ago by the server's clock the table was last analyzed.
 */
export async function findLexemeStats(db: Db): Promise<{ stats: LexemeStats | null; analyzedAgoMs: number }> {
  // most_common_elems is an anyarray: read through its text form as text[]. Its frequencies end with the minimum and
  // the maximum of the listed ones, and the frequency of null elements.
  const r = await sql<{
    elems: string[] | null;
    freqs: number[] | null;
    rows: number | string;
    ago_ms: number | string | null;
  }>`
    select s.most_common_elems::text::text[] as elems, s.most_common_elem_freqs as freqs, c.reltuples as rows,
      extract(epoch from now() - ${lastAnalyzedAt()}) * 1000 as ago_ms
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    left join pg_stats_ext_exprs s on s.schemaname = n.nspname and s.tablename = c.relname
      and s.statistics_name = 'search_docs_words'
    where c.oid = 'search_docs'::regclass`.execute(db);
  const row = r.rows[0];
  const analyzedAgoMs = Number(row?.ago_ms ?? 0);
  const rows = Number(row?.rows ?? -1);
  const elems = row?.elems ?? null;
  const freqs = row?.freqs ?? null;
  if (elems === null || freqs === null || elems.length === 0 || rows < 0)
    return { stats: null, analyzedAgoMs };
  const minFreq = Number(freqs[elems.length]);
  if (!Number.isFinite(minFreq)) return { stats: null, analyzedAgoMs };
  const stats = { freqs: new Map(elems.map((lexeme, i) => [lexeme, Number(freqs[i])])), minFreq, rows };
  return { stats, analyzedAgoMs };
}
