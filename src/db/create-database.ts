import pg from 'pg';

/** PostgreSQL's SQLSTATEs for a database that does not exist (on connect) and one that already does (on create). */
const INVALID_CATALOG_NAME = '3D000';
const DUPLICATE_DATABASE = '42P04';

/** A PostgreSQL identifier quoted for SQL text: the name comes from the operator's URL, never from a request. */
function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Creates the PostgreSQL database a URL names when it does not exist yet, through the server's `postgres` database
 * with the same credentials; returns its name when it was created, undefined otherwise (SQLite URLs included: their
 * file and folder are created on open). For the seeder and the benchmark, which fill a new database.
 */
export async function createPostgresDatabaseIfMissing(url: string): Promise<string | undefined> {
  if (!url.startsWith('postgres://') && !url.startsWith('postgresql://')) return undefined;
  let name: string;
  let admin: URL;
  try {
    // pg decodes the name with decodeURI; a URL the WHATWG parser refuses (a socket folder in ?host= with an empty
    // host) is left to pg, which then reports a missing database itself.
    name = decodeURI(new URL(url).pathname.slice(1));
    admin = new URL(url);
    admin.pathname = '/postgres';
  } catch {
    return undefined;
  }
  const probe = new pg.Client({ connectionString: url });
  try {
    await probe.connect();
    return undefined;
  } catch (err) {
    // Without a name in the URL the server picks one (the user's): nothing to create.
    if ((err as { code?: unknown }).code !== INVALID_CATALOG_NAME || name === '') throw err;
  } finally {
    await probe.end().catch(() => {});
  }
  const client = new pg.Client({ connectionString: admin.toString() });
  try {
    await client.connect();
    await client.query(`CREATE DATABASE ${quoteIdentifier(name)}`);
    return name;
  } catch (err) {
    // Another process created it between the probe and here.
    if ((err as { code?: unknown }).code === DUPLICATE_DATABASE) return undefined;
    throw err;
  } finally {
    await client.end().catch(() => {});
  }
}
