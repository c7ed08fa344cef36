import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, type RunningServer, startServer } from './support.ts';

const MARKER = '<!-- walkthrough -->';

/** The ```sh blocks that follow a walkthrough marker in README.md, in order. */
function walkthroughBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  const re = /<!-- walkthrough -->\s*\n```sh\n([\s\S]*?)\n```/g;
  for (const m of markdown.matchAll(re)) blocks.push(m[1] as string);
  return blocks;
}

const STEP = (i: number) => `@@step ${i}@@`;

// The README is read by a person on a fresh machine and executed here: one bash session, every block in order, the
// real server started as `npm start` does. Nothing in the blocks is rewritten; the test only sets BASE and DEV_CLIENT.
describe('README walkthrough', () => {
  let server: RunningServer;
  let steps: string[] = [];
  let run: { status: number | null; stdout: string; stderr: string };

  before(async () => {
    server = await startServer();
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const blocks = walkthroughBlocks(readme);
    assert.equal(
      blocks.length,
      (readme.match(new RegExp(MARKER, 'g')) ?? []).length,
      'every walkthrough marker is followed by a ```sh block',
    );
    // Fail on the first failing command, and make curl fail on an HTTP error status (the README's curl -s would not).
    const script = [
      'set -eo pipefail',
      'curl() { command curl --fail-with-body --max-time 20 "$@"; }',
      ...blocks.flatMap((b, i) => [`echo '${STEP(i)}'`, b]),
      `echo '${STEP(blocks.length)}'`,
    ].join('\n');
    const res = spawnSync('bash', ['-c', script], {
      cwd: ROOT,
      env: { ...process.env, BASE: server.base, DEV_CLIENT: server.devClientFile },
      encoding: 'utf8',
      timeout: 60_000,
    });
    run = { status: res.status, stdout: res.stdout, stderr: res.stderr };
    steps = blocks.map((_, i) => {
      const start = res.stdout.indexOf(STEP(i));
      const end = res.stdout.indexOf(STEP(i + 1));
      return start < 0 ? '' : res.stdout.slice(start + STEP(i).length, end < 0 ? undefined : end);
    });
  });
  after(async () => server?.stop());

  it('has the set-up block and seven steps, and every command succeeds', () => {
    assert.ok(steps.length >= 8, `expected at least 8 walkthrough blocks, found ${steps.length}`);
    assert.equal(run.status, 0, `the walkthrough failed:\n${run.stdout}\n${run.stderr}\n${server.output()}`);
    assert.match(run.stdout, new RegExp(STEP(steps.length)), 'the script ran to its end');
  });

  it('reads the development client that the first start saved', () => {
    assert.match(steps[0] ?? '', /client: dev-[0-9a-f]{8}/);
  });

  it('gets a guest token, registers and logs in', () => {
    assert.match(steps[1] ?? '', /"access_token":"[^"]+".*"scope":"guest"/);
    assert.match(steps[2] ?? '', /"status":"OK".*"type":"user".*"username":"ada_\d+"/);
    assert.match(steps[3] ?? '', /"scope":"user".*"refresh_token"/);
  });

  it('posts with a hashtag and finds the post by search and by its hashtag', () => {
    const post = JSON.parse((steps[4] ?? '').trim());
    assert.equal(post.data.type, 'post');
    assert.match(post.data.body, /#FirstSteps/);
    const [byWords, byTag] = (steps[5] ?? '').trim().split('\n');
    const words = JSON.parse(byWords ?? '{}');
    assert.ok(
      words.data.some((item: { uuid: string }) => item.uuid === post.data.uuid),
      `the search found the post: ${byWords}`,
    );
    const tags = JSON.parse(byTag ?? '{}');
    assert.ok(
      tags.data.some(
        (item: { type: string; name: string }) => item.type === 'tag' && item.name === 'FirstSteps',
      ),
    );
  });

  it('reads the tag and the association that links it to the post', () => {
    const [list, one, assocs] = (steps[6] ?? '').trim().split('\n');
    const tag = JSON.parse(one ?? '{}').data;
    assert.equal(JSON.parse(list ?? '{}').data[0].uuid, tag.uuid);
    assert.equal(tag.name, 'FirstSteps');
    assert.equal(tag.tag_type, 'hashtag');
    const post = JSON.parse((steps[4] ?? '').trim()).data;
    const associations = JSON.parse(assocs ?? '{}').data;
    assert.ok(associations.some((a: { target_uuid: string }) => a.target_uuid === post.uuid));
  });

  it('reads the karma record the post earned', () => {
    const [list, one] = (steps[7] ?? '').trim().split('\n');
    assert.equal(JSON.parse(list ?? '{}').count.total, 1);
    const record = JSON.parse(one ?? '{}').data;
    assert.equal(record.type, 'karma');
    assert.equal(record.event, 'postCreated');
    assert.equal(record.karma_type, 'add');
  });
});
