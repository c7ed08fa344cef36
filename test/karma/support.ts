import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { uuidv7 } from '../../src/db/time.ts';
import { body, type TestApp, type TestUser } from '../helper.ts';

/**
 * Drives the events karma listens to, always through the real HTTP routes: a route that answers anything but success
 * fails the test, so the karma suites cannot pass on a route that was renamed or dropped.
 */
export class KarmaDriver {
  readonly t: TestApp;

  constructor(t: TestApp) {
    this.t = t;
  }

  async #post(user: TestUser, url: string, payload?: object): Promise<LightMyRequestResponse> {
    return this.t.inject({ method: 'POST', url, token: user.token, payload: payload ?? {} });
  }

  async #create(user: TestUser, url: string, payload: object, what: string): Promise<string> {
    const res = await this.#post(user, url, payload);
    assert.equal(res.statusCode, 201, `${what}: ${res.body}`);
    return body(res).data.uuid;
  }

  async #delete(user: TestUser, url: string, what: string): Promise<void> {
    const res = await this.#post(user, url);
    assert.equal(res.statusCode, 200, `${what}: ${res.body}`);
  }

  /** A public post by the user. */
  async createPost(user: TestUser, text = 'hello world'): Promise<string> {
    return this.#create(user, '/posts', { body: text }, 'POST /posts');
  }

  /** Deletes a post (its author). */
  async deletePost(user: TestUser, uuid: string): Promise<void> {
    await this.#delete(user, `/posts/${uuid}/delete`, 'delete post');
  }

  /** A comment by the user under a post. */
  async createComment(user: TestUser, postUuid: string): Promise<string> {
    return this.#create(
      user,
      `/posts/${postUuid}/comments`,
      { body: 'nice post' },
      'POST /posts/{uuid}/comments',
    );
  }

  /** Deletes a comment (its author). */
  async deleteComment(user: TestUser, uuid: string, _postUuid?: string): Promise<void> {
    await this.#delete(user, `/comments/${uuid}/delete`, 'delete comment');
  }

  /** A network created by the user. */
  async createNetwork(user: TestUser): Promise<string> {
    return this.#create(user, '/networks', { name: `net ${uuidv7().slice(-8)}` }, 'POST /networks');
  }

  /** Deletes a network (its creator). */
  async deleteNetwork(user: TestUser, uuid: string): Promise<void> {
    await this.#delete(user, `/networks/${uuid}/delete`, 'delete network');
  }

  /** A media item uploaded by the user (a 1x1 PNG). */
  async createMedia(user: TestUser): Promise<string> {
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
      'base64',
    );
    const boundary = '----karmatest';
    const payload = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="title"\r\n\r\npixel\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.png"\r\nContent-Type: image/png\r\n\r\n`,
      ),
      png,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const res = await this.t.inject({
      method: 'POST',
      url: '/media',
      token: user.token,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload,
    });
    assert.equal(res.statusCode, 201, `POST /media: ${res.body}`);
    return body(res).data.uuid;
  }

  /** Deletes a media item (its owner). */
  async deleteMedia(user: TestUser, uuid: string): Promise<void> {
    await this.#delete(user, `/media/${uuid}/delete`, 'delete media');
  }

  /** a asks b, b confirms: a confirmed connection; returns its uuid. */
  async connect(a: TestUser, b: TestUser): Promise<string> {
    const uuid = await this.#create(a, '/connections', { user_uuid: b.uuid }, 'POST /connections');
    const confirm = await this.#post(b, `/connections/${uuid}/confirm`);
    assert.equal(confirm.statusCode, 200, confirm.body);
    return uuid;
  }

  /** Deletes a confirmed connection (either side may). */
  async disconnect(by: TestUser, uuid: string, _a?: TestUser, _b?: TestUser): Promise<void> {
    await this.#delete(by, `/connections/${uuid}/delete`, 'delete connection');
  }

  /** The user reacts to a post or comment (201, or 200 when the reaction already exists). */
  async react(user: TestUser, kind: 'post' | 'comment', target: string, _author?: string, emotion = 'like') {
    const res = await this.#post(user, `/${kind}s/${target}/emotions`, { name: emotion });
    assert.ok(
      res.statusCode === 201 || res.statusCode === 200,
      `POST /${kind}s/{uuid}/emotions: ${res.body}`,
    );
  }

  /** The user takes a reaction back. */
  async unreact(
    user: TestUser,
    kind: 'post' | 'comment',
    target: string,
    _author?: string,
    emotion = 'like',
  ) {
    await this.#delete(user, `/${kind}s/${target}/emotions/${emotion}/delete`, 'delete emotion');
  }
}

/** The user's stored total. */
export async function storedKarma(t: TestApp, userUuid: string): Promise<number> {
  const row = await t.ctx.db
    .selectFrom('users')
    .select('karma')
    .where('uuid', '=', userUuid)
    .executeTakeFirstOrThrow();
  return Number(row.karma);
}

/** The user's ledger, oldest first. */
export async function ledger(t: TestApp, userUuid: string) {
  return t.ctx.db
    .selectFrom('karma')
    .select(['uuid', 'event', 'target_uuid', 'target_type', 'karma_type', 'points'])
    .where('user_uuid', '=', userUuid)
    .orderBy('created_at')
    .orderBy('uuid')
    .execute();
}

/** Sum of add minus subtract points of the user's records. */
export async function ledgerSum(t: TestApp, userUuid: string): Promise<number> {
  const rows = await ledger(t, userUuid);
  return rows.reduce((s, r) => s + (r.karma_type === 'add' ? Number(r.points) : -Number(r.points)), 0);
}
