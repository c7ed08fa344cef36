import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  constants,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { crc32, deflateSync } from 'node:zlib';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.ts';
import { mediaCommand } from '../../src/cli/commands/media.command.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import {
  body,
  countRows,
  startTestApp,
  type TestApp,
  type TestDialect,
  type TestUser,
  testDialects,
} from '../helper.ts';

const MAX_BYTES = 4096;

/** A real 1x1 PNG, built from its chunks. */
function tinyPng(): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const typed = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(typed));
    return Buffer.concat([len, typed, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0);
  ihdr.writeUInt32BE(1, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.from([0, 255, 0, 0]))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A multipart/form-data body with text fields and optional files. */
function form(
  fields: Record<string, string>,
  files: { field: string; filename: string; type: string; data: Buffer }[],
) {
  const boundary = `----test${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
    );
  }
  for (const f of files) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${f.field}"; filename="${f.filename}"\r\nContent-Type: ${f.type}\r\n\r\n`,
      ),
      f.data,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return {
    payload: Buffer.concat(parts),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

for (const dialect of testDialects()) {
  describe(`media [${dialect.name}]`, () => {
    let t: TestApp;
    let owner: TestUser;
    let friend: TestUser;
    let stranger: TestUser;
    let mediaDir: string;
    const png = tinyPng();

    before(async () => {
      mediaDir = mkdtempSync(join(tmpdir(), 'media-test-'));
      t = await startTestApp(dialect, { MEDIA_DIR: mediaDir, MEDIA_MAX_BYTES: MAX_BYTES });
      owner = await t.createUser();
      friend = await t.createUser();
      stranger = await t.createUser();
      const req = body(
        await t.inject({
          method: 'POST',
          url: '/connections',
          token: owner.token,
          payload: { user_uuid: friend.uuid },
        }),
      ).data;
      await t.inject({ method: 'POST', url: `/connections/${req.uuid}/confirm`, token: friend.token });
    });
    after(async () => {
      await t?.close();
      rmSync(mediaDir, { recursive: true, force: true });
    });

    const upload = (
      token: string,
      fields: Record<string, string>,
      files = [{ field: 'file', filename: 'dot.png', type: 'image/png', data: png }],
    ) => {
      const f = form(fields, files);
      return t.inject({ method: 'POST', url: '/media', token, payload: f.payload, headers: f.headers });
    };
    const mediaRows = async () => (await t.ctx.db.selectFrom('media').select('uuid').execute()).length;
    const filesOnDisk = () => readdirSync(mediaDir);

    it('uploads a PNG (201), sniffs its type, and serves it back to those allowed', async () => {
      const res = await upload(owner.token, {
        title: 'A dot',
        description: 'One pixel',
        visibility: 'friends',
      });
      assert.equal(res.statusCode, 201, res.body);
      const m = body(res).data;
      assert.deepEqual(Object.keys(m).sort(), [
        'content_type',
        'created_at',
        'description',
        'language',
        'size',
        'title',
        'type',
        'user_uuid',
        'uuid',
        'visibility',
      ]);
      assert.equal(m.type, 'media');
      assert.equal(m.content_type, 'image/png');
      assert.equal(m.size, png.length);
      assert.equal(m.visibility, 'friends');
      assert.equal(m.language, 'en');
      assert.equal(filesOnDisk().length, 1);
      assert.ok(!filesOnDisk()[0]?.includes('tmp'), 'the temporary name was renamed');
      const mode = statSync(join(mediaDir, filesOnDisk()[0] as string)).mode & 0o777;
      assert.equal(
        mode,
        0o600,
        `the file is readable by the service's account only, not ${mode.toString(8)}`,
      );

      for (const [token, status] of [
        [t.guest, 404],
        [stranger.token, 404],
        [friend.token, 200],
        [owner.token, 200],
      ] as const) {
        const meta = await t.inject({ method: 'GET', url: `/media/${m.uuid}`, token });
        assert.equal(meta.statusCode, status);
        const file = await t.inject({ method: 'GET', url: `/media/${m.uuid}/file`, token });
        assert.equal(file.statusCode, status);
        if (status === 200) {
          assert.equal(file.headers['content-type'], 'image/png');
          assert.equal(file.headers['x-content-type-options'], 'nosniff');
          assert.equal(file.headers['content-disposition'], 'attachment; filename="A_dot.png"');
          assert.deepEqual(file.rawPayload, png);
        } else {
          assert.equal(body(file).error.code, 'object_not_found');
        }
      }
    });

    it('refuses an oversize file with 413 and leaves no row and no file', async () => {
      const rows = await mediaRows();
      const files = filesOnDisk().length;
      const big = Buffer.concat([png, randomBytes(MAX_BYTES)]);
      const res = await upload(owner.token, { title: 'big' }, [
        { field: 'file', filename: 'big.png', type: 'image/png', data: big },
      ]);
      assert.equal(res.statusCode, 413, res.body);
      assert.equal(body(res).status, 'ERROR');
      assert.equal(body(res).error.code, 'payload_too_large');
      assert.equal(await mediaRows(), rows);
      assert.equal(filesOnDisk().length, files);
    });

    it('refuses a disallowed type with 415 whatever the client claims, leaving nothing', async () => {
      const rows = await mediaRows();
      const files = filesOnDisk().length;
      for (const data of [Buffer.from('<html><script>alert(1)</script></html>'), Buffer.alloc(5000, 'a')]) {
        const res = await upload(owner.token, {}, [
          { field: 'file', filename: 'x.png', type: 'image/png', data },
        ]);
        assert.equal(res.statusCode, data.length > MAX_BYTES ? 413 : 415, res.body);
      }
      const res = await upload(owner.token, {}, [
        {
          field: 'file',
          filename: 'x.png',
          type: 'image/png',
          data: Buffer.from('plain text, not an image'),
        },
      ]);
      assert.equal(res.statusCode, 415);
      assert.equal(body(res).error.code, 'unsupported_media_type');
      assert.equal(await mediaRows(), rows);
      assert.equal(filesOnDisk().length, files);
    });

    it('rejects bad form fields with 400 in the envelope, leaving nothing', async () => {
      const rows = await mediaRows();
      const files = filesOnDisk().length;
      const cases: Record<string, string>[] = [
        { title: 'x'.repeat(201) },
        { description: 'x'.repeat(2001) },
        { visibility: 'everyone' },
        { language: 'xx' },
        { user_uuid: stranger.uuid },
        { storage_key: '../../etc/passwd' },
      ];
      for (const fields of cases) {
        const res = await upload(owner.token, fields);
        assert.equal(res.statusCode, 400, JSON.stringify(fields));
        assert.equal(body(res).error.code, 'invalid_request');
      }
      // A title that shows other than it reads (a reversed extension: "invoice\u202Efdp.exe" shows "invoiceexe.pdf").
      const spoof = await upload(owner.token, { title: 'invoice\u202Efdp.exe' });
      assert.equal(spoof.statusCode, 400, spoof.body);
      assert.equal(body(spoof).error.details[0].field, 'title');
      assert.match(body(spoof).error.details[0].message, /direction override/);
      const noFile = await upload(owner.token, { title: 'nothing' }, []);
      assert.equal(noFile.statusCode, 400);
      const wrongField = await upload(owner.token, {}, [
        { field: 'image', filename: 'dot.png', type: 'image/png', data: png },
      ]);
      assert.equal(wrongField.statusCode, 400);
      const twoFiles = await upload(owner.token, {}, [
        { field: 'file', filename: 'a.png', type: 'image/png', data: png },
        { field: 'file', filename: 'b.png', type: 'image/png', data: png },
      ]);
      assert.equal(twoFiles.statusCode, 400);
      // An upload of the PNG with one more text part, labelled application/json.
      const withJsonPart = (field: string, json: string) => {
        const f = form({}, [{ field: 'file', filename: 'dot.png', type: 'image/png', data: png }]);
        const boundary = /boundary=(.*)$/.exec(f.headers['content-type'])?.[1] as string;
        const part = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"\r\nContent-Type: application/json\r\n\r\n${json}\r\n`;
        return t.inject({
          method: 'POST',
          url: '/media',
          token: owner.token,
          payload: Buffer.concat([Buffer.from(part), f.payload]),
          headers: f.headers,
        });
      };
      // A text part labelled application/json arrives parsed; the validator would coerce null into "".
      for (const [field, json] of [
        ['description', 'null'],
        ['title', '123'],
        ['visibility', '["friends"]'],
      ] as const) {
        const res = await withJsonPart(field, json);
        assert.equal(res.statusCode, 400, `${field}: ${res.body}`);
        assert.equal(body(res).error.details[0].field, field);
      }
      // Labelled JSON but not JSON, or cut at the field size: the parser's own error, a 400 like any malformed form.
      for (const json of ['{oops', `"${'x'.repeat(17 * 1024)}"`]) {
        const res = await withJsonPart('title', json);
        assert.equal(res.statusCode, 400, `${json.slice(0, 10)}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request');
      }
      // A text part whose bytes are not UTF-8 (Latin-1 "café"): the parser would store U+FFFD in place of the é.
      const notUtf8 = await (() => {
        const f = form({}, [{ field: 'file', filename: 'dot.png', type: 'image/png', data: png }]);
        const boundary = /boundary=(.*)$/.exec(f.headers['content-type'])?.[1] as string;
        const head = `--${boundary}\r\nContent-Disposition: form-data; name="title"\r\n\r\n`;
        const part = Buffer.concat([
          Buffer.from(head),
          Buffer.from([0x63, 0x61, 0x66, 0xe9]),
          Buffer.from('\r\n'),
        ]);
        return t.inject({
          method: 'POST',
          url: '/media',
          token: owner.token,
          payload: Buffer.concat([part, f.payload]),
          headers: f.headers,
        });
      })();
      assert.equal(notUtf8.statusCode, 400, notUtf8.body);
      assert.equal(body(notUtf8).error.details[0].field, 'title');
      assert.match(body(notUtf8).error.details[0].message, /UTF-8/);
      // The file sent as a text field (curl -F file=photo.png, without the @) is a malformed form, not a 415.
      const textFile = form({ file: 'photo.png' }, []);
      const asText = await t.inject({
        method: 'POST',
        url: '/media',
        token: owner.token,
        payload: textFile.payload,
        headers: textFile.headers,
      });
      assert.equal(asText.statusCode, 400, asText.body);
      assert.equal(body(asText).error.details[0].field, 'file');
      const broken = await t.inject({
        method: 'POST',
        url: '/media',
        token: owner.token,
        payload: '--nope\r\ngarbage',
        headers: { 'content-type': 'multipart/form-data; boundary=nope' },
      });
      assert.equal(broken.statusCode, 400);
      assert.equal(body(broken).status, 'ERROR');
      const elsewhere = form({}, [{ field: 'file', filename: 'dot.png', type: 'image/png', data: png }]);
      const misplaced = await t.inject({
        method: 'POST',
        url: '/media/0190a000-0000-7000-8000-000000000000/delete',
        token: owner.token,
        payload: elsewhere.payload,
        headers: elsewhere.headers,
      });
      assert.equal(misplaced.statusCode, 415);
      // A JSON or form body is 415 whatever its fields, not a 400 about the missing file.
      for (const [payload, type] of [
        ['{"file":"x"}', 'application/json'],
        ['{"title":"x"}', 'application/json'],
        ['title=x', 'application/x-www-form-urlencoded'],
      ]) {
        const res = await t.inject({
          method: 'POST',
          url: '/media',
          token: owner.token,
          payload,
          headers: { 'content-type': type as string },
        });
        assert.equal(res.statusCode, 415, `${type} ${payload}: ${res.body}`);
        assert.equal(body(res).error.code, 'unsupported_media_type');
      }
      assert.equal(await mediaRows(), rows);
      assert.equal(filesOnDisk().length, files);
    });

    it('needs a logged-in user to upload', async () => {
      const guest = await upload(t.guest, {});
      assert.equal(guest.statusCode, 403);
      const none = await t.inject({
        method: 'POST',
        url: '/media',
        payload: form({}, []).payload,
        headers: form({}, []).headers,
      });
      assert.equal(none.statusCode, 401);
    });

    it('deletes by the owner only, removing the row and the file', async () => {
      const m = body(await upload(owner.token, { visibility: 'public' })).data;
      const files = filesOnDisk().length;
      for (const token of [friend.token, stranger.token]) {
        const res = await t.inject({ method: 'POST', url: `/media/${m.uuid}/delete`, token });
        assert.equal(res.statusCode, 404);
      }
      const guest = await t.inject({ method: 'POST', url: `/media/${m.uuid}/delete`, token: t.guest });
      assert.equal(guest.statusCode, 403);
      const res = await t.inject({ method: 'POST', url: `/media/${m.uuid}/delete`, token: owner.token });
      assert.equal(res.statusCode, 200);
      assert.equal(filesOnDisk().length, files - 1);
      const gone = await t.inject({ method: 'GET', url: `/media/${m.uuid}/file`, token: owner.token });
      assert.equal(gone.statusCode, 404);
    });

    it('deleting a user removes their media rows and, after the commit, their files', async () => {
      const leaving = await t.createUser();
      const m = body(await upload(leaving.token, {})).data;
      const key = (
        await t.ctx.db.selectFrom('media').select('storage_key').where('uuid', '=', m.uuid).executeTakeFirst()
      )?.storage_key;
      assert.ok(key && filesOnDisk().includes(key));
      const res = await t.inject({
        method: 'POST',
        url: `/users/${leaving.uuid}/delete`,
        token: leaving.token,
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(
        await t.ctx.db.selectFrom('media').select('uuid').where('uuid', '=', m.uuid).executeTakeFirst(),
        undefined,
      );
      for (let i = 0; i < 50 && filesOnDisk().includes(key); i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(!filesOnDisk().includes(key), 'the file is removed once the deletion committed');
    });

    it('stores an upload once when its transaction runs again after a failed COMMIT', {
      skip: dialect.name !== 'postgres' && 'PostgreSQL runs a transaction again (RetryingKysely)',
    }, async () => {
      // A deferred trigger fails the first COMMIT with a serialization failure, after the file was moved; a
      // sequence counts the runs, as it is not rolled back with them.
      await sql
        .raw(`create sequence media_runs;
            create function media_fail_once() returns trigger language plpgsql as $$
              begin
                if nextval('media_runs') = 1 then raise exception 'forced' using errcode = '40001'; end if;
                return null;
              end $$;
            create constraint trigger media_fail_once after insert on media
              deferrable initially deferred for each row execute function media_fail_once()`)
        .execute(t.ctx.db);
      try {
        const rows = await mediaRows();
        const files = filesOnDisk().length;
        const res = await upload(owner.token, { title: 'Twice' });
        assert.equal(res.statusCode, 201, res.body);
        const runs = await sql<{ n: number }>`select last_value as n from media_runs`.execute(t.ctx.db);
        assert.equal(Number(runs.rows[0]?.n), 2, 'the transaction ran twice');
        assert.equal(await mediaRows(), rows + 1);
        assert.equal(filesOnDisk().length, files + 1);
        const file = await t.inject({
          method: 'GET',
          url: `/media/${body(res).data.uuid}/file`,
          token: owner.token,
        });
        assert.equal(file.statusCode, 200);
        assert.deepEqual(file.rawPayload, png);
      } finally {
        await sql
          .raw(
            `drop trigger media_fail_once on media; drop function media_fail_once(); drop sequence media_runs`,
          )
          .execute(t.ctx.db);
      }
    });

    it('a subscriber forced to fail leaves neither a row nor a file', async () => {
      let fail = true;
      t.ctx.bus.on(['mediaCreated'], async () => {
        if (fail) throw new Error('subscriber forced to fail');
      });
      const rows = await mediaRows();
      const files = filesOnDisk().length;
      const res = await upload(owner.token, {});
      fail = false;
      assert.equal(res.statusCode, 500);
      assert.equal(await mediaRows(), rows);
      assert.equal(filesOnDisk().length, files);
    });

    it('`media sweep` removes old files without a record and cut-off uploads, and nothing else', async () => {
      const made = await upload(owner.token, { title: 'kept' });
      assert.equal(made.statusCode, 201, made.body);
      const kept = body(made).data.uuid as string;
      const [row] = await t.ctx.db
        .selectFrom('media')
        .select('storage_key')
        .where('uuid', '=', kept)
        .execute();
      const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
      const hex = () => randomBytes(16).toString('hex');
      const orphan = hex();
      const youngOrphan = hex();
      const cutOff = `.upload-${hex()}.tmp`;
      writeFileSync(join(mediaDir, orphan), 'left behind by a deletion');
      writeFileSync(join(mediaDir, youngOrphan), 'perhaps an upload whose record is on its way');
      writeFileSync(join(mediaDir, cutOff), 'an upload cut off by a crash');
      writeFileSync(join(mediaDir, 'notes.txt'), 'not ours to remove');
      for (const name of [row?.storage_key as string, orphan, cutOff, 'notes.txt']) {
        utimesSync(join(mediaDir, name), twoHoursAgo, twoHoursAgo);
      }
      const printed: string[] = [];
      const original = console.log;
      console.log = (...args: unknown[]) => printed.push(args.join(' '));
      try {
        assert.equal(await mediaCommand.run(t.ctx, ['sweep']), 0);
      } finally {
        console.log = original;
      }
      assert.match(printed.join('\n'), /media swept: 1 files without a record, 1 cut-off uploads, 53 bytes/);
      const left = filesOnDisk();
      for (const name of [orphan, cutOff]) assert.ok(!left.includes(name), `${name} removed`);
      for (const name of [row?.storage_key as string, youngOrphan, 'notes.txt']) {
        assert.ok(left.includes(name), `${name} kept`);
      }
      const served = await t.inject({ method: 'GET', url: `/media/${kept}/file`, token: owner.token });
      assert.equal(served.statusCode, 200, 'the recorded file is still served');
      assert.equal(await mediaCommand.run(t.ctx, ['sweep', '--older-than', '0']), 2);
      assert.equal(await mediaCommand.run(t.ctx, ['tidy']), 2);
    });
  });
}

// A folder that passes the start's check (root may write anywhere) but where no file can be created: sysfs refuses
// every new file. The upload's file then fails to open while the request is being read.
const UNWRITABLE_DIR = '/sys/fs';
const canUseUnwritableDir = (() => {
  try {
    accessSync(UNWRITABLE_DIR, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
})();

describe('an upload whose file cannot be stored', {
  skip: !canUseUnwritableDir && 'needs root (sysfs)',
}, () => {
  const dialect = testDialects()[0] as TestDialect;
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, { MEDIA_DIR: UNWRITABLE_DIR });
  });
  after(async () => t?.close());

  it('answers 503 unavailable, records nothing, and the process keeps serving', async () => {
    const user = await t.createUser();
    const f = form({}, [{ field: 'file', filename: 'dot.png', type: 'image/png', data: tinyPng() }]);
    // Sent in two pieces with a pause: the file's open fails while the server waits for the rest, when no read or
    // write of it is pending to report the error (an 'error' event nobody listened to ended the process).
    const cut = f.payload.length - 40;
    const payload = Readable.from(
      (async function* () {
        yield f.payload.subarray(0, cut);
        await sleep(200);
        yield f.payload.subarray(cut);
      })(),
    );
    const res = await t.inject({
      method: 'POST',
      url: '/media',
      token: user.token,
      headers: f.headers,
      payload,
    });
    assert.equal(res.statusCode, 503, res.body);
    assert.equal(body(res).error.code, 'unavailable');
    assert.equal(res.headers['retry-after'], '1');
    assert.equal(await countRows(t.ctx.db, 'media'), 0);
    const me = await t.inject({ method: 'GET', url: '/me', token: user.token });
    assert.equal(me.statusCode, 200);
  });
});

describe('MEDIA_DIR checked at start', () => {
  it('a MEDIA_DIR that cannot be a writable folder stops the start with a ConfigError naming it', async () => {
    const base = mkdtempSync(join(tmpdir(), 'media-dir-'));
    try {
      const file = join(base, 'a-file');
      writeFileSync(file, 'not a folder');
      const config = loadConfig(
        {},
        { DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', MEDIA_DIR: join(file, 'media') },
      );
      await assert.rejects(buildApp(config, { logger: false }), (err: Error) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.match(
          err.message,
          /^Invalid environment variable MEDIA_DIR: cannot write to the folder .*ENOTDIR/,
        );
        return true;
      });
      // A missing folder is created, readable by this account only.
      const fresh = join(base, 'new', 'media');
      const { app } = await buildApp(
        loadConfig({}, { DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', MEDIA_DIR: fresh }),
        { logger: false },
      );
      await app.close();
      assert.equal(statSync(fresh).mode & 0o777, 0o700);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});

for (const dialect of testDialects()) {
  describe(`media: each user's stored bytes are bounded (MEDIA_USER_MAX_BYTES) [${dialect.name}]`, () => {
    let t: TestApp;
    let mediaDir: string;
    const png = tinyPng();

    before(async () => {
      mediaDir = mkdtempSync(join(tmpdir(), 'media-quota-'));
      t = await startTestApp(dialect, { MEDIA_DIR: mediaDir, MEDIA_USER_MAX_BYTES: png.length * 2 });
    });
    after(async () => {
      await t?.close();
      rmSync(mediaDir, { recursive: true, force: true });
    });

    it('refuses the upload past the quota with 413, storing nothing; a deletion makes room again', async () => {
      const [ana, ben] = [await t.createUser(), await t.createUser()];
      const upload = (token: string) => {
        const f = form({}, [{ field: 'file', filename: 'dot.png', type: 'image/png', data: png }]);
        return t.inject({ method: 'POST', url: '/media', token, payload: f.payload, headers: f.headers });
      };
      const first = body(await upload(ana.token)).data;
      assert.equal((await upload(ana.token)).statusCode, 201);
      const over = await upload(ana.token);
      assert.equal(over.statusCode, 413, over.body);
      assert.equal(body(over).error.code, 'payload_too_large');
      assert.match(body(over).error.message, /MEDIA_USER_MAX_BYTES/);
      assert.equal(await countRows(t.ctx.db, 'media'), 2, 'no record');
      assert.equal(readdirSync(mediaDir).length, 2, 'no file left behind');
      assert.equal((await upload(ben.token)).statusCode, 201, 'the quota is per user');
      await t.inject({ method: 'POST', url: `/media/${first.uuid}/delete`, token: ana.token });
      assert.equal((await upload(ana.token)).statusCode, 201);
    });

    it('refuses a full account before reading the file, and stops writing a file once it passes what is left', async () => {
      const carl = await t.createUser();
      const send = (data: Buffer, type = 'image/png') => {
        const f = form({}, [{ field: 'file', filename: 'f.bin', type, data }]);
        return t.inject({
          method: 'POST',
          url: '/media',
          token: carl.token,
          payload: f.payload,
          headers: f.headers,
        });
      };
      // Past what is left as it arrives: cut off there, before its type is even read (a text file, refused with 415
      // once whole), with the size it had reached.
      const big = await send(Buffer.alloc(8192, 'x'), 'text/plain');
      assert.equal(big.statusCode, 413, big.body);
      assert.match(body(big).error.message, /would take at least \d+ bytes/);
      assert.equal((await send(png)).statusCode, 201);
      assert.equal((await send(png)).statusCode, 201);
      // Full: refused before the content is read, so even a file of a refused type gets the quota's 413, not a 415.
      const full = await send(Buffer.from('plain text, not an image'), 'text/plain');
      assert.equal(full.statusCode, 413, full.body);
      assert.match(body(full).error.message, /already store/);
      assert.equal(
        readdirSync(mediaDir).filter((n) => n.startsWith('.upload-')).length,
        0,
        'no temporary file left',
      );
    });
  });
}
