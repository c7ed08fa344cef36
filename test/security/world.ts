import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { issueTokens } from '../../src/modules/auth/auth.service.ts';
import { hashPassword } from '../../src/modules/auth/password.ts';
import { hashToken } from '../../src/modules/auth/token.ts';
import { insertUser } from '../../src/modules/user/user.repository.ts';
import type { TestApp } from '../helper.ts';

/** The callers every cell of the matrix is driven with. */
export const CALLERS = [
  'none',
  'expired',
  'revoked',
  'guest',
  'stranger',
  'friend',
  'owner',
  'admin',
] as const;
/** One caller of the matrix. */
export type Caller = (typeof CALLERS)[number];
/** Callers that hold a user token. */
export const USERS = ['stranger', 'friend', 'owner', 'admin'] as const;

/** A user of the world, with both tokens it was issued. */
export interface WorldUser {
  uuid: string;
  username: string;
  email: string;
  password: string;
  token: string;
  refresh: string;
}

/** Items of the world, created once per app. */
export interface Items {
  posts: Record<Visibility, string>;
  comments: Record<Visibility, string>;
  media: Record<Visibility, string>;
  associations: Record<Visibility, string>;
  message: string;
  network: string;
  karma: string;
  tag: string;
}

/** Visibility of content. */
export type Visibility = 'public' | 'friends' | 'private';
export const VISIBILITIES: readonly Visibility[] = ['public', 'friends', 'private'];

/** Everything a cell needs: the app, the users, the tokens and the shared items. */
export interface World {
  t: TestApp;
  /** owner (alice), friend (bob, confirmed both ways), stranger (carol), admin (dave), other (erin). */
  users: Record<'owner' | 'friend' | 'stranger' | 'admin' | 'other', WorldUser>;
  expired: string;
  revoked: string;
  items: Items;
  /** Every raw token, refresh token and secret issued in the test: none may ever appear in an answer. */
  secrets: Set<string>;
  /** Word in every post, comment and media title, for searches. */
  word: string;
}

const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
let passwordHash: Promise<string> | undefined;

/** Inserts a user with a shared password hash (hashing costs ~30 ms) and issues its access and refresh tokens. */
export async function fastUser(t: TestApp, role = 'user', secrets?: Set<string>): Promise<WorldUser> {
  passwordHash ??= hashPassword(PASSWORD);
  const uuid = uuidv7();
  const username = `u${randomBytes(5).toString('hex')}`;
  const email = `${username}@mail.example`;
  const now = nowIso();
  await insertUser(t.ctx.db, {
    uuid,
    username,
    username_key: username,
    email,
    email_key: email,
    password_hash: await passwordHash,
    display_name: null,
    bio: null,
    language: 'en',
    network_uuid: null,
    role,
    karma: 0,
    created_at: now,
    updated_at: now,
  });
  const issued = await issueTokens(t.ctx, t.ctx.db, t.client.id, uuid);
  secrets?.add(issued.access_token);
  if (issued.refresh_token) secrets?.add(issued.refresh_token);
  return {
    uuid,
    username,
    email,
    password: PASSWORD,
    token: issued.access_token,
    refresh: issued.refresh_token ?? '',
  };
}

/** Calls the app and insists on a 2xx; returns data.uuid (or the whole body). */
export async function must(
  t: TestApp,
  opts: { method: string; url: string; token?: string; payload?: unknown; headers?: Record<string, string> },
  // biome-ignore lint/suspicious/noExplicitAny: bodies are inspected freely.
): Promise<any> {
  const res = await t.inject(opts as Parameters<TestApp['inject']>[0]);
  if (res.statusCode < 200 || res.statusCode > 299) {
    throw new Error(`${opts.method} ${opts.url} -> ${res.statusCode} ${res.body}`);
  }
  return JSON.parse(res.body);
}

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** A multipart upload of a 1x1 PNG. */
export function mediaUpload(fields: Record<string, string>): {
  payload: Buffer;
  headers: Record<string, string>;
} {
  const boundary = `----sec${randomBytes(6).toString('hex')}`;
  const parts = Object.entries(fields).map(
    ([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`,
  );
  const payload = Buffer.concat([
    Buffer.from(
      `${parts.join('')}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.png"\r\nContent-Type: image/png\r\n\r\n`,
    ),
    PNG,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** Builders of fresh items (for writes that consume their item). */
export class Fresh {
  readonly w: World;
  constructor(w: World) {
    this.w = w;
  }
  get #owner() {
    return this.w.users.owner.token;
  }
  async post(visibility: Visibility = 'public', token = this.#owner): Promise<string> {
    const b = await must(this.w.t, {
      method: 'POST',
      url: '/posts',
      token,
      payload: { body: `${this.w.word} post ${visibility}`, visibility },
    });
    return b.data.uuid;
  }
  async comment(post?: string): Promise<string> {
    const p = post ?? (await this.post());
    const b = await must(this.w.t, {
      method: 'POST',
      url: `/posts/${p}/comments`,
      token: this.#owner,
      payload: { body: `${this.w.word} comment` },
    });
    return b.data.uuid;
  }
  async media(visibility: Visibility = 'public'): Promise<string> {
    const up = mediaUpload({ title: `${this.w.word} picture`, visibility });
    const b = await must(this.w.t, { method: 'POST', url: '/media', token: this.#owner, ...up });
    return b.data.uuid;
  }
  async message(): Promise<string> {
    const b = await must(this.w.t, {
      method: 'POST',
      url: '/messages',
      token: this.#owner,
      payload: { recipient_uuid: this.w.users.friend.uuid, body: `${this.w.word} message` },
    });
    return b.data.uuid;
  }
  async network(): Promise<string> {
    const b = await must(this.w.t, {
      method: 'POST',
      url: '/networks',
      token: this.#owner,
      payload: { name: `net ${randomBytes(4).toString('hex')}`, description: this.w.word },
    });
    return b.data.uuid;
  }
  async tag(): Promise<string> {
    const b = await must(this.w.t, {
      method: 'POST',
      url: '/tags/create',
      token: this.#owner,
      payload: { name: `t${randomBytes(5).toString('hex')}`, tag_type: 'hashtag' },
    });
    return b.data.uuid;
  }
  async association(target?: string): Promise<string> {
    const b = await must(this.w.t, {
      method: 'POST',
      url: '/tag-association',
      token: this.#owner,
      payload: {
        tag_uuid: await this.tag(),
        target_uuid: target ?? this.w.items.posts.public,
        target_type: 'post',
      },
    });
    return b.data.uuid;
  }
  /** A user of its own (its token is the owner's for that cell). */
  async user(): Promise<WorldUser> {
    return fastUser(this.w.t, 'user', this.w.secrets);
  }
  /** A karma record of a fresh user (a post earns one), with that user's token. */
  async karma(): Promise<{ uuid: string; token: string }> {
    const u = await this.user();
    await this.post('public', u.token);
    const b = await must(this.w.t, { method: 'GET', url: '/karma', token: u.token });
    return { uuid: b.data[0].uuid, token: u.token };
  }
  /** A pending connection from a fresh user to the owner. */
  async incomingConnection(): Promise<string> {
    const u = await this.user();
    const b = await must(this.w.t, {
      method: 'POST',
      url: '/connections',
      token: u.token,
      payload: { user_uuid: this.w.users.owner.uuid },
    });
    return b.data.uuid;
  }
  /** The owner's `like` on a fresh public post or comment; returns the target's uuid. */
  async reaction(kind: 'posts' | 'comments'): Promise<string> {
    const target = kind === 'posts' ? await this.post() : await this.comment();
    await must(this.w.t, {
      method: 'POST',
      url: `/${kind}/${target}/emotions`,
      token: this.#owner,
      payload: { name: 'like' },
    });
    return target;
  }
}

/** Builds the world of an app: five users (one pair of friends, an admin), bad tokens, and one item of each kind. */
export async function buildWorld(t: TestApp): Promise<World> {
  const secrets = new Set<string>([t.guest, t.client.secret]);
  const users = {
    owner: await fastUser(t, 'user', secrets),
    friend: await fastUser(t, 'user', secrets),
    stranger: await fastUser(t, 'user', secrets),
    admin: await fastUser(t, 'admin', secrets),
    other: await fastUser(t, 'user', secrets),
  };
  const conn = await must(t, {
    method: 'POST',
    url: '/connections',
    token: users.owner.token,
    payload: { user_uuid: users.friend.uuid },
  });
  await must(t, { method: 'POST', url: `/connections/${conn.data.uuid}/confirm`, token: users.friend.token });

  // An expired token of the owner (its expiry set in the past) and a revoked one (through RFC 7009 revocation).
  const expired = await issueTokens(t.ctx, t.ctx.db, t.client.id, users.owner.uuid);
  await t.ctx.db
    .updateTable('tokens')
    .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
    .where('token_hash', '=', hashToken(expired.access_token))
    .execute();
  const revoked = await issueTokens(t.ctx, t.ctx.db, t.client.id, users.owner.uuid);
  await must(t, {
    method: 'POST',
    url: '/oauth/revoke',
    payload: { token: revoked.access_token, client_id: t.client.id, client_secret: t.client.secret },
  });
  for (const x of [expired, revoked]) {
    secrets.add(x.access_token);
    if (x.refresh_token) secrets.add(x.refresh_token);
  }

  const w: World = {
    t,
    users,
    expired: expired.access_token,
    revoked: revoked.access_token,
    items: {} as Items,
    secrets,
    word: 'zebrafish',
  };
  const fresh = new Fresh(w);
  const posts = {} as Record<Visibility, string>;
  const comments = {} as Record<Visibility, string>;
  const media = {} as Record<Visibility, string>;
  for (const v of VISIBILITIES) {
    posts[v] = await fresh.post(v);
    comments[v] = await fresh.comment(posts[v]);
    media[v] = await fresh.media(v);
  }
  w.items = {
    posts,
    comments,
    media,
    associations: {} as Record<Visibility, string>,
    message: await fresh.message(),
    network: await fresh.network(),
    karma: (await must(t, { method: 'GET', url: '/karma', token: users.owner.token })).data[0].uuid,
    tag: await fresh.tag(),
  };
  for (const v of VISIBILITIES) w.items.associations[v] = await fresh.association(posts[v]);
  return w;
}

/** The token a caller sends (undefined: no Authorization header). */
export function tokenOf(w: World, caller: Caller): string | undefined {
  switch (caller) {
    case 'none':
      return undefined;
    case 'expired':
      return w.expired;
    case 'revoked':
      return w.revoked;
    case 'guest':
      return w.t.guest;
    default:
      return w.users[caller].token;
  }
}

/** The email a caller may see (its own), if any. */
export function emailOf(w: World, caller: Caller): string | undefined {
  return caller === 'stranger' || caller === 'friend' || caller === 'owner' || caller === 'admin'
    ? w.users[caller].email
    : undefined;
}

/** One request of a cell. */
export interface Cell {
  url: string;
  payload?: unknown;
  headers?: Record<string, string>;
  /** The addressed item's uuid, replaced by a random one for the "missing item" twin of the request. */
  item?: string;
  /** A token that replaces the owner's (items whose owner is made for the cell). */
  ownerToken?: string;
  /** Whether the addressed item still exists (writes that consume it). */
  exists?: () => Promise<boolean>;
}

/** One scenario of a route: an item and who may reach it. */
export interface Case {
  name: string;
  /** Users (and the guest, on Public routes) that may reach the item; default: everyone the level lets in. */
  allowed?: readonly Caller[];
  /** Statuses an allowed caller may get; default [200] ([201] for creations). */
  ok?: readonly number[];
  /** The request of one caller; `fresh` when the caller is expected to succeed (a write may consume the item). */
  build(caller: Caller, fresh?: boolean): Promise<Cell>;
}

/**
 * A build for writes that consume their item: a new item for each caller expected to succeed, one shared item
 * for every refusal (a refusal must leave it in place, which the matrix checks).
 */
function consumable(make: () => Promise<Cell>): Case['build'] {
  let shared: Promise<Cell> | undefined;
  return async (_caller, fresh) => {
    if (fresh) return make();
    shared ??= make();
    return shared;
  };
}

function rowExists(
  w: World,
  table:
    | 'posts'
    | 'comments'
    | 'media'
    | 'messages'
    | 'networks'
    | 'users'
    | 'karma'
    | 'tags'
    | 'tag_associations'
    | 'connections',
  uuid: string,
) {
  return async () =>
    // biome-ignore lint/suspicious/noExplicitAny: the table name is one of the fixed names above.
    (await (w.t.ctx.db as any)
      .selectFrom(table)
      .select('uuid')
      .where('uuid', '=', uuid)
      .executeTakeFirst()) !== undefined;
}

const unique = () => randomBytes(5).toString('hex');

/** The cases of every route, keyed like the access table (`POST /posts/{}/update`). */
export function casesFor(w: World): Record<string, Case[]> {
  const f = new Fresh(w);
  const { items, users, t } = w;
  const one = (build: Case['build'], extra: Partial<Case> = {}): Case[] => [
    { name: 'item', build, ...extra },
  ];
  const byVisibility = (build: (v: Visibility) => Case['build'], extra: Partial<Case> = {}): Case[] =>
    VISIBILITIES.map((v) => ({
      name: v,
      allowed:
        v === 'public'
          ? (['guest', 'stranger', 'friend', 'owner', 'admin'] as const)
          : v === 'friends'
            ? (['friend', 'owner'] as const)
            : (['owner'] as const),
      build: build(v),
      ...extra,
    }));
  const get = (url: string): Case[] => one(async () => ({ url }));
  const search = (path: string) => get(`${path}?query=${w.word}`);
  const created = [201] as const;

  return {
    'POST /oauth/token': one(async () => ({
      url: '/oauth/token',
      payload: { grant_type: 'client_credentials', client_id: t.client.id, client_secret: t.client.secret },
    })),
    'POST /oauth/revoke': one(async () => ({
      url: '/oauth/revoke',
      payload: { token: 'not-a-token', client_id: t.client.id, client_secret: t.client.secret },
    })),
    'GET /health': get('/health'),
    'GET /ready': get('/ready'),
    'GET /openapi.json': get('/openapi.json'),
    'GET /metrics': get('/metrics'),
    'GET /docs': one(async () => ({ url: '/docs' }), { ok: [301] }),
    'GET /docs/': get('/docs/'),
    'GET /docs/js/scalar.js': get('/docs/js/scalar.js'),
    'GET /favicon.ico': one(async () => ({ url: '/favicon.ico' }), { ok: [200, 204] }),

    'POST /users': one(
      async () => {
        const name = `n${unique()}`;
        return {
          url: '/users',
          payload: { username: name, email: `${name}@new.example`, password: 'a long password' },
        };
      },
      { ok: created },
    ),
    'GET /users/{}': one(async () => ({ url: `/users/${users.owner.uuid}`, item: users.owner.uuid })),
    'GET /me': get('/me'),
    'POST /users/{}/update': one(async () => ({
      url: `/users/${users.owner.uuid}/update`,
      item: users.owner.uuid,
      payload: { bio: 'still me' },
    })),
    'POST /users/{}/delete': one(
      consumable(async () => {
        const u = await f.user();
        return {
          url: `/users/${u.uuid}/delete`,
          item: u.uuid,
          ownerToken: u.token,
          exists: rowExists(w, 'users', u.uuid),
        };
      }),
    ),

    'POST /connections': one(
      async () => ({ url: '/connections', payload: { user_uuid: (await f.user()).uuid } }),
      { ok: created },
    ),
    'GET /connections': get('/connections'),
    'POST /connections/{}/confirm': one(
      consumable(async () => {
        const c = await f.incomingConnection();
        return { url: `/connections/${c}/confirm`, item: c };
      }),
      { allowed: ['owner'] },
    ),
    'POST /connections/{}/delete': one(
      consumable(async () => {
        const c = await f.incomingConnection();
        return { url: `/connections/${c}/delete`, item: c, exists: rowExists(w, 'connections', c) };
      }),
      { allowed: ['owner'] },
    ),

    'POST /networks': one(async () => ({ url: '/networks', payload: { name: `net ${unique()}` } }), {
      ok: created,
    }),
    'GET /networks/{}': one(async () => ({ url: `/networks/${items.network}`, item: items.network })),
    'POST /networks/{}/update': one(async () => ({
      url: `/networks/${items.network}/update`,
      item: items.network,
      payload: { description: 'updated' },
    })),
    'POST /networks/{}/delete': one(
      consumable(async () => {
        const n = await f.network();
        return { url: `/networks/${n}/delete`, item: n, exists: rowExists(w, 'networks', n) };
      }),
    ),
    'POST /networks/{}/join': one(async () => ({
      url: `/networks/${items.network}/join`,
      item: items.network,
    })),

    'POST /posts': one(async () => ({ url: '/posts', payload: { body: `${w.word} new` } }), { ok: created }),
    'GET /posts/{}': byVisibility((v) => async () => ({
      url: `/posts/${items.posts[v]}`,
      item: items.posts[v],
    })),
    // A post of its own: an edit re-syncs the post's hashtag associations, which the shared items rely on.
    'POST /posts/{}/update': one(
      consumable(async () => {
        const p = await f.post();
        return { url: `/posts/${p}/update`, item: p, payload: { body: `${w.word} edited` } };
      }),
    ),
    'POST /posts/{}/delete': one(
      consumable(async () => {
        const p = await f.post();
        return { url: `/posts/${p}/delete`, item: p, exists: rowExists(w, 'posts', p) };
      }),
    ),
    'POST /posts/{}/comments': byVisibility(
      (v) => async () => ({
        url: `/posts/${items.posts[v]}/comments`,
        item: items.posts[v],
        payload: { body: 'a reply' },
      }),
      { ok: created },
    ).map((c) => ({ ...c, allowed: c.allowed?.filter((x) => x !== 'guest') })),
    'GET /comments/{}': byVisibility((v) => async () => ({
      url: `/comments/${items.comments[v]}`,
      item: items.comments[v],
    })),
    'POST /comments/{}/update': one(
      consumable(async () => {
        const c = await f.comment();
        return { url: `/comments/${c}/update`, item: c, payload: { body: `${w.word} edited` } };
      }),
    ),
    'POST /comments/{}/delete': one(
      consumable(async () => {
        const c = await f.comment();
        return { url: `/comments/${c}/delete`, item: c, exists: rowExists(w, 'comments', c) };
      }),
    ),

    'POST /media': one(async () => ({ url: '/media', ...mediaUpload({ title: 'new' }) }), { ok: created }),
    'GET /media/{}': byVisibility((v) => async () => ({
      url: `/media/${items.media[v]}`,
      item: items.media[v],
    })),
    'GET /media/{}/file': byVisibility((v) => async () => ({
      url: `/media/${items.media[v]}/file`,
      item: items.media[v],
    })),
    'POST /media/{}/delete': one(
      consumable(async () => {
        const m = await f.media();
        return { url: `/media/${m}/delete`, item: m, exists: rowExists(w, 'media', m) };
      }),
    ),

    'POST /messages': one(
      async () => ({ url: '/messages', payload: { recipient_uuid: users.other.uuid, body: 'hello' } }),
      { ok: created },
    ),
    'GET /messages': get('/messages'),
    'GET /messages/{}': one(async () => ({ url: `/messages/${items.message}`, item: items.message }), {
      allowed: ['owner', 'friend'],
    }),
    'POST /messages/{}/delete': one(
      consumable(async () => {
        const m = await f.message();
        return { url: `/messages/${m}/delete`, item: m, exists: rowExists(w, 'messages', m) };
      }),
      { allowed: ['owner'] },
    ),

    'GET /karma': get('/karma'),
    'GET /karma/{}': one(async () => ({ url: `/karma/${items.karma}`, item: items.karma })),
    'POST /karma/{}/update': one(async () => ({
      url: `/karma/${items.karma}/update`,
      item: items.karma,
      payload: {
        event: 'postCreated',
        target_uuid: items.posts.public,
        target_type: 'post',
        karma_type: 'add',
        points: 1,
      },
    })),
    'POST /karma/{}/delete': one(
      consumable(async () => {
        const k = await f.karma();
        return {
          url: `/karma/${k.uuid}/delete`,
          item: k.uuid,
          ownerToken: k.token,
          exists: rowExists(w, 'karma', k.uuid),
        };
      }),
    ),

    'GET /tags': get('/tags'),
    'GET /tags/trending': get('/tags/trending'),
    'GET /tags/{}': one(async () => ({ url: `/tags/${items.tag}`, item: items.tag })),
    'POST /tags/create': one(
      async () => ({ url: '/tags/create', payload: { name: `t${unique()}`, tag_type: 'hashtag' } }),
      { ok: created },
    ),
    'POST /tags/{}/delete': one(
      consumable(async () => {
        const tag = await f.tag();
        return { url: `/tags/${tag}/delete`, item: tag, payload: {}, exists: rowExists(w, 'tags', tag) };
      }),
    ),
    'PUT /tags/{}/update': one(
      consumable(async () => {
        const tag = await f.tag();
        return {
          url: `/tags/${tag}/update`,
          item: tag,
          payload: { name: `t${unique()}`, tag_type: 'hashtag' },
        };
      }),
    ),

    'GET /tag-associations': get('/tag-associations'),
    'GET /tag-associations/{}': byVisibility((v) => async () => ({
      url: `/tag-associations/${items.associations[v]}`,
      item: items.associations[v],
    })),
    'POST /tag-association': one(
      async () => ({
        url: '/tag-association',
        payload: { tag_uuid: await f.tag(), target_uuid: items.posts.public, target_type: 'post' },
      }),
      { ok: created },
    ),
    'POST /tag-associations/{}': one(
      consumable(async () => {
        const a = await f.association();
        return {
          url: `/tag-associations/${a}`,
          item: a,
          payload: { _method: 'delete' },
          exists: rowExists(w, 'tag_associations', a),
        };
      }),
    ),
    'DELETE /tag-associations/{}': one(
      consumable(async () => {
        const a = await f.association();
        return {
          url: `/tag-associations/${a}`,
          item: a,
          payload: {},
          exists: rowExists(w, 'tag_associations', a),
        };
      }),
    ),
    'PATCH /tag-associations/{}': one(
      consumable(async () => {
        const a = await f.association();
        return { url: `/tag-associations/${a}`, item: a, payload: { target_type: 'post' } };
      }),
    ),
    'POST /posts/{}/emotions': byVisibility(
      (v) => async () => ({
        url: `/posts/${items.posts[v]}/emotions`,
        item: items.posts[v],
        payload: { name: 'like' },
      }),
      { ok: [200, 201] },
    ).map((c) => ({ ...c, allowed: c.allowed?.filter((x) => x !== 'guest') })),
    'POST /comments/{}/emotions': byVisibility(
      (v) => async () => ({
        url: `/comments/${items.comments[v]}/emotions`,
        item: items.comments[v],
        payload: { name: 'love' },
      }),
      { ok: [200, 201] },
    ).map((c) => ({ ...c, allowed: c.allowed?.filter((x) => x !== 'guest') })),
    'POST /posts/{}/emotions/{}/delete': one(
      consumable(async () => {
        const p = await f.reaction('posts');
        return { url: `/posts/${p}/emotions/like/delete`, item: p, payload: {} };
      }),
      { allowed: ['owner'] },
    ),
    'POST /comments/{}/emotions/{}/delete': one(
      consumable(async () => {
        const c = await f.reaction('comments');
        return { url: `/comments/${c}/emotions/like/delete`, item: c, payload: {} };
      }),
      { allowed: ['owner'] },
    ),

    'GET /search': search('/search'),
    'GET /search/types': search('/search/types'),
    'GET /search/users': get(`/search/users?query=${users.owner.username.slice(0, 4)}`),
    'GET /search/friends': get(`/search/friends?query=${users.friend.username.slice(0, 4)}`),
    'GET /search/hashtags': get('/search/hashtags?query=t'),
    'GET /search/mentions': get(`/search/mentions?query=${users.friend.username.slice(0, 3)}`),
    'GET /search/networks': get('/search/networks?query=net'),
    'GET /search/complete': get('/search/complete?query=u'),
  };
}

/** An answer with the parts that differ between two identical answers (request id, timestamp) taken out. */
export function comparable(res: LightMyRequestResponse): string {
  let text = res.body;
  try {
    const b = JSON.parse(text);
    if (b && typeof b === 'object') {
      delete b.timestamp;
      if (b.error && typeof b.error === 'object') delete b.error.request_id;
    }
    text = JSON.stringify(b);
  } catch {
    // Not JSON: compared as is.
  }
  return `${res.statusCode} ${text}`;
}
