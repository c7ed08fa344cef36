/**
 * The access table: every route and method the app serves, with the access level DESIGN.md gives it. The
 * authorization matrix drives every row over every caller, and fails when the app (its routes and /openapi.json)
 * and this table disagree, so a route added later cannot go untested.
 */

/** Access level of a route (src/modules/auth/access.plugin.ts). */
export type Access = 'none' | 'public' | 'logged' | 'owner' | 'admin';

/** HTTP methods the service uses (HEAD is derived from GET by Fastify and checked against it). */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One route and method. */
export interface AccessRow {
  method: Method;
  /** Path in OpenAPI form (`/posts/{uuid}`). */
  path: string;
  access: Access;
  /** Owner routes: an admin passes too. */
  adminOverride?: true;
  /** The switchable operation named in the route's config (off unless ENABLED_OPERATIONS names it). */
  operation?: string;
  /** Switched off by default (404 operation_disabled before any other check), by config or by a route hook. */
  switchable?: true;
  /** Not an API operation, so not in the OpenAPI document (reference pages, metrics). */
  undocumented?: true;
  /** The rule on top of the level, in words (who among logged-in users may; visibility). */
  rule?: string;
}

const r = (
  method: Method,
  path: string,
  access: Access,
  extra: Omit<AccessRow, 'method' | 'path' | 'access'> = {},
) => ({ method, path, access, ...extra }) satisfies AccessRow;

/** Every route of the app. */
export const ACCESS_TABLE: readonly AccessRow[] = [
  // Platform and OAuth.
  r('POST', '/oauth/token', 'none', { rule: 'client authentication in the request itself' }),
  r('POST', '/oauth/revoke', 'none', { rule: 'client authentication in the request itself' }),
  r('GET', '/health', 'none'),
  r('GET', '/ready', 'none'),
  r('GET', '/openapi.json', 'none', { undocumented: true }),
  r('GET', '/metrics', 'none', { undocumented: true }),
  r('GET', '/docs', 'none', { undocumented: true }),
  r('GET', '/docs/', 'none', { undocumented: true }),
  r('GET', '/docs/js/scalar.js', 'none', { undocumented: true }),
  r('GET', '/favicon.ico', 'none', { undocumented: true }),
  // Users.
  r('POST', '/users', 'public'),
  r('GET', '/users/{uuid}', 'public'),
  r('GET', '/me', 'logged'),
  r('POST', '/users/{uuid}/update', 'owner'),
  r('POST', '/users/{uuid}/delete', 'owner'),
  // Connections.
  r('POST', '/connections', 'logged'),
  r('GET', '/connections', 'logged', { rule: "the caller's own connections" }),
  r('POST', '/connections/{uuid}/confirm', 'logged', { rule: 'the addressee only; others 404' }),
  r('POST', '/connections/{uuid}/delete', 'logged', { rule: 'either side only; others 404' }),
  // Networks.
  r('POST', '/networks', 'logged'),
  r('GET', '/networks/{uuid}', 'public'),
  r('POST', '/networks/{uuid}/update', 'owner'),
  r('POST', '/networks/{uuid}/delete', 'owner'),
  r('POST', '/networks/{uuid}/join', 'logged'),
  // Posts and comments.
  r('POST', '/posts', 'logged'),
  r('GET', '/posts/{uuid}', 'public', { rule: 'visible posts only; others 404' }),
  r('POST', '/posts/{uuid}/update', 'owner'),
  r('POST', '/posts/{uuid}/delete', 'owner'),
  r('POST', '/posts/{uuid}/comments', 'logged', { rule: 'the post must be visible; others 404' }),
  r('GET', '/comments/{uuid}', 'public', { rule: "the post's visibility; others 404" }),
  r('POST', '/comments/{uuid}/update', 'owner'),
  r('POST', '/comments/{uuid}/delete', 'owner'),
  // Media.
  r('POST', '/media', 'logged'),
  r('GET', '/media/{uuid}', 'public', { rule: 'visible media only; others 404' }),
  r('GET', '/media/{uuid}/file', 'public', { rule: 'visible media only; others 404' }),
  r('POST', '/media/{uuid}/delete', 'owner'),
  // Messages.
  r('POST', '/messages', 'logged'),
  r('GET', '/messages', 'logged', { rule: 'messages the caller sent or received' }),
  r('GET', '/messages/{uuid}', 'logged', { rule: 'sender or recipient; others 404' }),
  r('POST', '/messages/{uuid}/delete', 'logged', { rule: 'the sender only; others 404' }),
  // Karma.
  r('GET', '/karma', 'logged', { rule: "the caller's own records" }),
  r('GET', '/karma/{karma_uuid}', 'owner'),
  r('POST', '/karma/{karma_uuid}/update', 'owner'),
  r('POST', '/karma/{karma_uuid}/delete', 'owner'),
  // Tags.
  r('GET', '/tags', 'public'),
  r('GET', '/tags/trending', 'public'),
  r('GET', '/tags/{tag_uuid}', 'public'),
  r('POST', '/tags/create', 'logged', { operation: 'tags.create', switchable: true }),
  r('POST', '/tags/{uuid}/delete', 'admin', { operation: 'tags.delete', switchable: true }),
  r('PUT', '/tags/{tag_uuid}/update', 'admin', { operation: 'tags.update', switchable: true }),
  // Tag associations and reactions.
  r('GET', '/tag-associations', 'public', { rule: 'associations whose target is visible' }),
  r('GET', '/tag-associations/{tag_association_uuid}', 'public', {
    rule: 'the target must be visible; others 404',
  }),
  r('POST', '/tag-association', 'logged', { operation: 'tag-associations.create', switchable: true }),
  r('POST', '/tag-associations/{tag_association_uuid}', 'owner', {
    adminOverride: true,
    switchable: true,
    rule: 'delete or update, picked by X-HTTP-Method-Override or _method; the creator or an admin',
  }),
  r('DELETE', '/tag-associations/{tag_association_uuid}', 'owner', {
    adminOverride: true,
    operation: 'tag-associations.delete',
    switchable: true,
  }),
  r('PATCH', '/tag-associations/{tag_association_uuid}', 'owner', {
    adminOverride: true,
    operation: 'tag-associations.update',
    switchable: true,
  }),
  r('POST', '/posts/{uuid}/emotions', 'logged', { rule: 'the post must be visible; others 404' }),
  r('POST', '/posts/{uuid}/emotions/{name}/delete', 'logged', { rule: 'the reacting user only; others 404' }),
  r('POST', '/comments/{uuid}/emotions', 'logged', { rule: 'the comment must be visible; others 404' }),
  r('POST', '/comments/{uuid}/emotions/{name}/delete', 'logged', {
    rule: 'the reacting user only; others 404',
  }),
  // Search.
  r('GET', '/search', 'public', { rule: 'only items visible to the caller' }),
  r('GET', '/search/types', 'public', { rule: 'only items visible to the caller' }),
  r('GET', '/search/users', 'public'),
  r('GET', '/search/friends', 'logged'),
  r('GET', '/search/hashtags', 'public'),
  r('GET', '/search/mentions', 'logged'),
  r('GET', '/search/networks', 'public'),
  r('GET', '/search/complete', 'public'),
];

/** The key of a row: method and path with parameter names dropped (`POST /posts/{}/update`). */
export function routeKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${normalizePath(path)}`;
}

/** A path with every parameter (`{uuid}`, `:uuid`, `:tag_uuid|:uuid`) written as `{}`. */
export function normalizePath(path: string): string {
  return path.replace(/\{[^}/]+\}/g, '{}').replace(/:[A-Za-z0-9_]+(\|:[A-Za-z0-9_]+)*/g, '{}');
}
