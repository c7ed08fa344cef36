import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { Db } from '../../src/db/database.ts';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import type { DomainEvent } from '../../src/events/bus.ts';
import { body, type TestApp, type TestUser } from '../helper.ts';

/**
 * Drives the events karma listens to. Each action goes through the real HTTP route when the app has it; while a
 * content route is not there yet, it writes the rows the event refers to and emits the event in a transaction,
 * exactly as the owning service would. `paths` records which way each action went.
 */
export class KarmaDriver {
  readonly t: TestApp;
  readonly paths = new Map<string, 'http' | 'event'>();
  readonly #associations = new Map<string, string>();

  constructor(t: TestApp) {
    this.t = t;
  }

  #note(action: string, path: 'http' | 'event'): void {
    this.paths.set(action, path);
  }

  /** Whether the answer is "no such route" (the route is not built yet). */
  #missingRoute(res: LightMyRequestResponse): boolean {
    return res.statusCode === 404 && body(res)?.error?.code === 'not_found';
  }

  async #emit(event: DomainEvent, write?: (trx: Db) => Promise<void>) {
    const { ctx } = this.t;
    await ctx.db.transaction().execute(async (trx) => {
      if (write) await write(trx);
      await ctx.bus.emit(trx, event);
    });
  }

  async #post(user: TestUser, url: string, payload?: object): Promise<LightMyRequestResponse> {
    return this.t.inject({ method: 'POST', url, token: user.token, payload: payload ?? {} });
  }

  #created(res: LightMyRequestResponse, what: string): string {
    assert.ok(res.statusCode === 200 || res.statusCode === 201, `${what}: ${res.statusCode} ${res.body}`);
    return body(res).data.uuid;
  }

  #deleted(res: LightMyRequestResponse, what: string): void {
    assert.equal(res.statusCode, 200, `${what}: ${res.body}`);
  }

  /** A public post by the user. */
  async createPost(user: TestUser, text = 'hello world'): Promise<string> {
    const res = await this.#post(user, '/posts', { body: text });
    if (!this.#missingRoute(res)) {
      this.#note('post', 'http');
      return this.#created(res, 'POST /posts');
    }
    this.#note('post', 'event');
    const uuid = uuidv7();
    const now = nowIso();
    await this.#emit(
      { name: 'postCreated', actorUuid: user.uuid, targetUuid: uuid, targetType: 'post' },
      (trx) =>
        trx
          .insertInto('posts')
          .values({
            uuid,
            user_uuid: user.uuid,
            body: text,
            visibility: 'public',
            language: 'en',
            network_uuid: null,
            created_at: now,
            updated_at: now,
          })
          .execute()
          .then(() => undefined),
    );
    return uuid;
  }

  /** Deletes a post (its author). */
  async deletePost(user: TestUser, uuid: string): Promise<void> {
    const res = await this.#post(user, `/posts/${uuid}/delete`);
    if (!this.#missingRoute(res)) return this.#deleted(res, 'delete post');
    await this.#emit({ name: 'postDeleted', actorUuid: user.uuid, targetUuid: uuid, targetType: 'post' });
    await this.t.ctx.db.deleteFrom('posts').where('uuid', '=', uuid).execute();
  }

  /** A comment by the user under a post. */
  async createComment(user: TestUser, postUuid: string): Promise<string> {
    const res = await this.#post(user, `/posts/${postUuid}/comments`, { body: 'nice post' });
    if (!this.#missingRoute(res)) {
      this.#note('comment', 'http');
      return this.#created(res, 'POST /posts/{uuid}/comments');
    }
    this.#note('comment', 'event');
    const uuid = uuidv7();
    const now = nowIso();
    await this.#emit(
      {
        name: 'commentCreated',
        actorUuid: user.uuid,
        targetUuid: uuid,
        targetType: 'comment',
        data: { post_uuid: postUuid },
      },
      (trx) =>
        trx
          .insertInto('comments')
          .values({
            uuid,
            post_uuid: postUuid,
            user_uuid: user.uuid,
            body: 'nice post',
            language: 'en',
            created_at: now,
            updated_at: now,
          })
          .execute()
          .then(() => undefined),
    );
    return uuid;
  }

  /** Deletes a comment (its author). */
  async deleteComment(user: TestUser, uuid: string, postUuid: string): Promise<void> {
    const res = await this.#post(user, `/comments/${uuid}/delete`);
    if (!this.#missingRoute(res)) return this.#deleted(res, 'delete comment');
    await this.#emit({
      name: 'commentDeleted',
      actorUuid: user.uuid,
      targetUuid: uuid,
      targetType: 'comment',
      data: { post_uuid: postUuid },
    });
    await this.t.ctx.db.deleteFrom('comments').where('uuid', '=', uuid).execute();
  }

  /** A network created by the user. */
  async createNetwork(user: TestUser): Promise<string> {
    const res = await this.#post(user, '/networks', { name: `net ${uuidv7().slice(-8)}` });
    if (!this.#missingRoute(res)) {
      this.#note('network', 'http');
      return this.#created(res, 'POST /networks');
    }
    this.#note('network', 'event');
    const uuid = uuidv7();
    const now = nowIso();
    await this.#emit(
      { name: 'networkCreated', actorUuid: user.uuid, targetUuid: uuid, targetType: 'network' },
      (trx) =>
        trx
          .insertInto('networks')
          .values({
            uuid,
            name: 'net',
            description: null,
            payment_id: null,
            user_uuid: user.uuid,
            created_at: now,
            updated_at: now,
          })
          .execute()
          .then(() => undefined),
    );
    return uuid;
  }

  /** Deletes a network (its creator). */
  async deleteNetwork(user: TestUser, uuid: string): Promise<void> {
    const res = await this.#post(user, `/networks/${uuid}/delete`);
    if (!this.#missingRoute(res)) return this.#deleted(res, 'delete network');
    await this.#emit({
      name: 'networkDeleted',
      actorUuid: user.uuid,
      targetUuid: uuid,
      targetType: 'network',
    });
    await this.t.ctx.db.deleteFrom('networks').where('uuid', '=', uuid).execute();
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
    if (!this.#missingRoute(res)) {
      this.#note('media', 'http');
      return this.#created(res, 'POST /media');
    }
    this.#note('media', 'event');
    const uuid = uuidv7();
    const now = nowIso();
    await this.#emit(
      { name: 'mediaCreated', actorUuid: user.uuid, targetUuid: uuid, targetType: 'media' },
      (trx) =>
        trx
          .insertInto('media')
          .values({
            uuid,
            user_uuid: user.uuid,
            title: 'pixel',
            description: null,
            content_type: 'image/png',
            size: png.length,
            visibility: 'public',
            language: 'en',
            storage_key: uuid,
            created_at: now,
            updated_at: now,
          })
          .execute()
          .then(() => undefined),
    );
    return uuid;
  }

  /** Deletes a media item (its owner). */
  async deleteMedia(user: TestUser, uuid: string): Promise<void> {
    const res = await this.#post(user, `/media/${uuid}/delete`);
    if (!this.#missingRoute(res)) return this.#deleted(res, 'delete media');
    await this.#emit({ name: 'mediaDeleted', actorUuid: user.uuid, targetUuid: uuid, targetType: 'media' });
    await this.t.ctx.db.deleteFrom('media').where('uuid', '=', uuid).execute();
  }

  /** a asks b, b confirms: a confirmed connection; returns its uuid. */
  async connect(a: TestUser, b: TestUser): Promise<string> {
    const res = await this.#post(a, '/connections', { user_uuid: b.uuid });
    if (!this.#missingRoute(res)) {
      this.#note('connection', 'http');
      const uuid = this.#created(res, 'POST /connections');
      const confirm = await this.#post(b, `/connections/${uuid}/confirm`);
      assert.equal(confirm.statusCode, 200, confirm.body);
      return uuid;
    }
    this.#note('connection', 'event');
    const uuid = uuidv7();
    const now = nowIso();
    await this.#emit(
      {
        name: 'connectionConfirmed',
        actorUuid: b.uuid,
        targetUuid: uuid,
        targetType: 'connection',
        data: { user_uuid: a.uuid, target_user_uuid: b.uuid },
      },
      async (trx) => {
        await trx
          .insertInto('connections')
          .values({
            uuid,
            user_uuid: a.uuid,
            target_user_uuid: b.uuid,
            pair_key: [a.uuid, b.uuid].sort().join(':'),
            status: 'confirmed',
            created_at: now,
            updated_at: now,
          })
          .execute();
      },
    );
    return uuid;
  }

  /** Deletes a confirmed connection (either side may). */
  async disconnect(by: TestUser, uuid: string, a: TestUser, b: TestUser): Promise<void> {
    const res = await this.#post(by, `/connections/${uuid}/delete`);
    if (!this.#missingRoute(res)) return this.#deleted(res, 'delete connection');
    await this.#emit({
      name: 'connectionDeleted',
      actorUuid: by.uuid,
      targetUuid: uuid,
      targetType: 'connection',
      data: { user_uuid: a.uuid, target_user_uuid: b.uuid },
    });
    await this.t.ctx.db.deleteFrom('connections').where('uuid', '=', uuid).execute();
  }

  /** The user reacts to a post or comment written by `author`. */
  async react(user: TestUser, kind: 'post' | 'comment', target: string, author: string, emotion = 'like') {
    const res = await this.#post(user, `/${kind}s/${target}/emotions`, { name: emotion });
    if (!this.#missingRoute(res)) {
      this.#note('emotion', 'http');
      this.#created(res, `POST /${kind}s/{uuid}/emotions`);
      return;
    }
    this.#note('emotion', 'event');
    const association = uuidv7();
    this.#associations.set(`${user.uuid}:${target}:${emotion}`, association);
    await this.#emit({
      name: 'emotionCreated',
      actorUuid: user.uuid,
      targetUuid: target,
      targetType: kind,
      data: { emotion, author_uuid: author, association_uuid: association },
    });
  }

  /** The user takes a reaction back. */
  async unreact(user: TestUser, kind: 'post' | 'comment', target: string, author: string, emotion = 'like') {
    const res = await this.#post(user, `/${kind}s/${target}/emotions/${emotion}/delete`);
    if (!this.#missingRoute(res)) return this.#deleted(res, 'delete emotion');
    const association = this.#associations.get(`${user.uuid}:${target}:${emotion}`) ?? uuidv7();
    await this.#emit({
      name: 'emotionDeleted',
      actorUuid: user.uuid,
      targetUuid: target,
      targetType: kind,
      data: { emotion, author_uuid: author, association_uuid: association },
    });
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
