import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * Indexes for the sortable and filterable properties of the list whitelists (GET /tags, /tag-associations, /karma,
 * /connections, /messages), so `ORDER BY col asc|desc, uuid` under the usual filters walks an index instead of
 * sorting the table (docs/reliability.md, Part B, "Resource limits after indexes").
 *
 * Shape: [equality filter columns,] sort column, uuid. The list engine (src/http/list-query.ts) orders
 * `col asc nulls first, uuid asc` or `col desc nulls last, uuid desc`: SQLite's own null order, and on PostgreSQL
 * the sort column is declared NULLS FIRST so a forward scan gives the first and a backward scan the second (its
 * default, NULLS LAST, would not match and the engine would sort). On SQLite the indexes of 0001-core that a new
 * one extends (same leading columns) are dropped so every write does not maintain both.
 */
export function listIndexesMigration(dialect: Dialect) {
  // [name, table, equality columns, sort column or null (uuid order only)]
  const indexes: [string, string, string[], string | null][] = [
    // GET /tags (63,000 rows in the 1,000,000-post world): every sortable property, alone or under tag_type.
    ['tags_name_uuid', 'tags', [], 'name'],
    ['tags_count_uuid', 'tags', [], 'associations_count'],
    ['tags_created_uuid', 'tags', [], 'created_at'],
    ['tags_updated_uuid', 'tags', [], 'updated_at'],
    ['tags_type_uuid', 'tags', ['tag_type'], null],
    ['tags_type_name_uuid', 'tags', ['tag_type'], 'name'],
    ['tags_type_count_uuid', 'tags', ['tag_type'], 'associations_count'],
    ['tags_type_created_uuid', 'tags', ['tag_type'], 'created_at'],
    // GET /tag-associations: sort by each property; filter by tag, user, target or type, newest first.
    ['tag_associations_tag_uuid', 'tag_associations', ['tag_uuid'], null],
    ['tag_associations_tag_created_uuid', 'tag_associations', ['tag_uuid'], 'created_at'],
    ['tag_associations_user_uuid', 'tag_associations', ['user_uuid'], null],
    ['tag_associations_user_created_uuid', 'tag_associations', ['user_uuid'], 'created_at'],
    ['tag_associations_target_uuid', 'tag_associations', ['target_uuid'], null],
    ['tag_associations_type_uuid', 'tag_associations', ['target_type'], null],
    ['tag_associations_type_created_uuid', 'tag_associations', ['target_type'], 'created_at'],
    ['tag_associations_created_uuid', 'tag_associations', [], 'created_at'],
    // GET /karma: always one user's records; each sortable property under user_uuid.
    ['karma_user_uuid', 'karma', ['user_uuid'], null],
    ['karma_user_created_uuid', 'karma', ['user_uuid'], 'created_at'],
    ['karma_user_updated_uuid', 'karma', ['user_uuid'], 'updated_at'],
    ['karma_user_points_uuid', 'karma', ['user_uuid'], 'points'],
    ['karma_user_event_uuid', 'karma', ['user_uuid'], 'event'],
    ['karma_user_target_uuid', 'karma', ['user_uuid'], 'target_uuid'],
    ['karma_user_target_type_uuid', 'karma', ['user_uuid'], 'target_type'],
    ['karma_user_karma_type_uuid', 'karma', ['user_uuid'], 'karma_type'],
    // GET /connections and GET /messages: a user's side of each (the OR of two sides is two index ranges).
    ['connections_user_created_uuid', 'connections', ['user_uuid'], 'created_at'],
    ['connections_target_created_uuid', 'connections', ['target_user_uuid'], 'created_at'],
    ['messages_user_created_uuid', 'messages', ['user_uuid'], 'created_at'],
    ['messages_recipient_created_uuid', 'messages', ['recipient_uuid'], 'created_at'],
  ];
  // Superseded by the ones above (same leading columns, plus the uuid tie-breaker), on SQLite only: on PostgreSQL
  // the new sort columns are NULLS FIRST, so a backward scan gives `desc nulls last`, while other queries order
  // `created_at desc` (PostgreSQL's NULLS FIRST), which only the old indexes serve without a sort (for example the
  // newest associations of each tag of a /tags page: 1.5 to 2 s per page without tag_associations_tag_created).
  const dropped =
    dialect === 'postgres'
      ? []
      : [
          'tag_associations_tag_created',
          'tag_associations_target',
          'tag_associations_created',
          'karma_user_created',
          'connections_user_uuid',
          'connections_target_user_uuid',
          'messages_user_uuid',
          'messages_recipient_uuid',
        ];
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const [name, table, eq, sortColumn] of indexes) {
        await sql.raw(listIndexDdl(dialect, name, table, eq, sortColumn)).execute(db);
      }
      for (const name of dropped) await sql.raw(`DROP INDEX IF EXISTS ${name}`).execute(db);
      // Fresh statistics of these tables so the planners weigh the new indexes right away.
      for (const table of ['tags', 'tag_associations', 'karma', 'connections', 'messages']) {
        await sql.raw(`ANALYZE ${table}`).execute(db);
      }
    },
  };
}

/**
 * The CREATE INDEX of a list index in the shape above: equality columns, then the sort column if any, then uuid;
 * each but uuid NULLS FIRST on PostgreSQL (equality columns too: without a sort column they are the sort, as in
 * sortby[tag_type]). Names and columns are this code's own constants, never a request's.
 */
export function listIndexDdl(
  dialect: Dialect,
  name: string,
  table: string,
  eq: string[],
  sortColumn: string | null,
): string {
  const nullsFirst = dialect === 'postgres' ? ' NULLS FIRST' : '';
  const columns = [...eq, ...(sortColumn ? [sortColumn] : [])].map((c) => `${c}${nullsFirst}`);
  columns.push('uuid');
  return `CREATE INDEX IF NOT EXISTS ${name} ON ${table} (${columns.join(', ')})`;
}
