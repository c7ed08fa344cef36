// Password hashing shares libuv's thread pool with file I/O and SQLite's WAL flushes (src/db/wal-sync.ts), which
// every acknowledged write waits for: a burst of logins must leave threads to them.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { hashPassword, verifyPassword } from '../../src/modules/auth/password.ts';

describe('password hashing', () => {
  it('verifies the password it hashed and nothing else', async () => {
    const phc = await hashPassword('correct horse battery staple');
    assert.match(phc, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    assert.equal(await verifyPassword('correct horse battery staple', phc), true);
    assert.equal(await verifyPassword('correct horse battery stapler', phc), false);
    assert.equal(await verifyPassword('anything', 'not a phc string'), false);
  });

  it('leaves thread-pool work to run while eight hashes are waiting', async () => {
    const order: string[] = [];
    const hashes = Array.from({ length: 8 }, (_, i) =>
      hashPassword(`password number ${i}`).then(() => order.push('hash')),
    );
    // Queued behind four running hashes, a file read would wait for two of them to end.
    const read = readFile(new URL(import.meta.url)).then(() => order.push('read'));
    await Promise.all([...hashes, read]);
    assert.equal(order[0], 'read', `order: ${order.join(', ')}`);
    assert.equal(order.length, 9);
  });
});
