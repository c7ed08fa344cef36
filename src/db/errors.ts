/**
 * Whether a database error is a unique-constraint violation, on either engine: PostgreSQL SQLSTATE 23505;
 * node:sqlite's SQLITE_CONSTRAINT_UNIQUE (2067) or SQLITE_CONSTRAINT_PRIMARYKEY (1555), or its message.
 */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown } | null | undefined;
  if (e?.code === '23505') return true;
  const errcode = Number(e?.errcode);
  return errcode === 2067 || errcode === 1555 || /UNIQUE constraint failed/i.test(String(e?.message ?? ''));
}

/**
 * Whether a database error is a foreign-key violation, on either engine: PostgreSQL SQLSTATE 23503; node:sqlite's
 * SQLITE_CONSTRAINT_FOREIGNKEY (787). Reached when an item a write refers to is deleted by a concurrent request.
 */
export function isForeignKeyViolation(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown } | null | undefined;
  return e?.code === '23503' || Number(e?.errcode) === 787;
}
