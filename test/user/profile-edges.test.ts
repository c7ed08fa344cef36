import assert from 'node:assert/strict';
import { argon2, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

// Edges of profiles and networks found by a review: passwords in another Unicode form, "" taken for null on update,
// a network description that could not be cleared, a network's removal not moving its posts' updated_at, and a
// repeated join that moved the user's.

const NFC = 'pässwörd-ünïcode';
const NFD = NFC.normalize('NFD');

for (const dialect of testDialects()) {
  describe(`profile and network edges [${dialect.name}]`, () => {
    let t: TestApp;
    let owner: TestUser;

    before(async () => {
      t = await startTestApp(dialect, { LOGIN_FAILURES_PER_MINUTE: 1000, REGISTRATIONS_PER_MINUTE: 1000 });
      owner = await t.createUser();
    });
    after(async () => t?.close());

    const login = (username: string, password: string) =>
      t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: {
          grant_type: 'password',
          username,
          password,
          client_id: t.client.id,
          client_secret: t.client.secret,
        },
      });
    const post = (user: TestUser, url: string, payload: object = {}) =>
      t.inject({ method: 'POST', url, token: user.token, payload });

    it('a password is the same password in either Unicode form', async () => {
      assert.notEqual(NFC, NFD);
      const made = await t.inject({
        method: 'POST',
        url: '/users',
        token: t.guest,
        payload: { username: 'unicode_pw', email: 'unicode@example.com', password: NFD },
      });
      assert.equal(made.statusCode, 201, made.body);
      assert.equal((await login('unicode_pw', NFC)).statusCode, 200);
      assert.equal((await login('unicode_pw', NFD)).statusCode, 200);
      assert.equal((await login('unicode_pw', 'passwörd-ünïcode')).statusCode, 400);
    });

    it('a hash made before normalization still takes the password as it was typed', async () => {
      const user = await t.createUser('legacy_pw');
      const salt = randomBytes(16);
      const params = { memory: 19_456, passes: 2, parallelism: 1, tagLength: 32 };
      const hash = await promisify(argon2)('argon2id', { message: NFD, nonce: salt, ...params });
      const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');
      const phc = `$argon2id$v=19$m=19456,t=2,p=1$${b64(salt)}$${b64(hash)}`;
      await t.ctx.db.updateTable('users').set({ password_hash: phc }).where('uuid', '=', user.uuid).execute();
      assert.equal((await login('legacy_pw', NFD)).statusCode, 200);
      assert.equal((await login('legacy_pw', 'wrong password')).statusCode, 400);
    });

    it('"" is not null on a profile update: a 400 for display_name, an empty bio; null clears both', async () => {
      const set = await post(owner, `/users/${owner.uuid}/update`, {
        display_name: 'Shown',
        bio: 'About me',
      });
      assert.equal(set.statusCode, 200, set.body);
      const empty = await post(owner, `/users/${owner.uuid}/update`, { display_name: '' });
      assert.equal(empty.statusCode, 400, empty.body);
      assert.equal(body(empty).error.details[0].field, 'display_name');
      const kept = await t.inject({ method: 'GET', url: `/users/${owner.uuid}`, token: t.guest });
      assert.equal(body(kept).data.display_name, 'Shown');
      const emptyBio = await post(owner, `/users/${owner.uuid}/update`, { bio: '' });
      assert.equal(emptyBio.statusCode, 200, emptyBio.body);
      assert.equal(body(emptyBio).data.bio, '');
      const cleared = await post(owner, `/users/${owner.uuid}/update`, { display_name: null, bio: null });
      assert.equal(cleared.statusCode, 200, cleared.body);
      assert.equal(body(cleared).data.display_name, null);
      assert.equal(body(cleared).data.bio, null);
    });

    it("a network's description can be cleared with null", async () => {
      const made = await post(owner, '/networks', { name: 'Clearable', description: 'for now' });
      const uuid = body(made).data.uuid;
      const cleared = await post(owner, `/networks/${uuid}/update`, { description: null });
      assert.equal(cleared.statusCode, 200, cleared.body);
      assert.equal(body(cleared).data.description, null);
      const read = await t.inject({ method: 'GET', url: `/networks/${uuid}`, token: t.guest });
      assert.equal(body(read).data.description, null);
    });

    it("joining one's own network again changes nothing; deleting it clears the network on posts and members", async () => {
      const member = await t.createUser();
      const made = await post(owner, '/networks', { name: 'Short lived' });
      const network = body(made).data.uuid;
      const first = await post(member, `/networks/${network}/join`);
      assert.equal(first.statusCode, 200, first.body);
      await new Promise((r) => setTimeout(r, 5));
      const again = await post(member, `/networks/${network}/join`);
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(body(again).data.updated_at, body(first).data.updated_at);
      const inside = await post(member, '/posts', { body: 'in the network', network_uuid: network });
      assert.equal(inside.statusCode, 201, inside.body);
      assert.equal((await post(owner, `/networks/${network}/delete`)).statusCode, 200);
      const after = await t.inject({
        method: 'GET',
        url: `/posts/${body(inside).data.uuid}`,
        token: t.guest,
      });
      assert.equal(body(after).data.network_uuid, null);
      // The post's updated_at stays its author's last edit (docs/content.md).
      assert.equal(body(after).data.updated_at, body(inside).data.updated_at);
      const left = await t.inject({ method: 'GET', url: `/users/${member.uuid}`, token: t.guest });
      assert.equal(body(left).data.network_uuid, null);
    });
  });
}
