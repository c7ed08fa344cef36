import assert from 'node:assert/strict';
import { body, type TestApp, type TestUser } from '../helper.ts';

/** Creates a post through HTTP and returns its uuid. */
export async function createPost(
  t: TestApp,
  user: TestUser,
  text: string,
  extra: { visibility?: string; language?: string } = {},
): Promise<string> {
  const res = await t.inject({
    method: 'POST',
    url: '/posts',
    token: user.token,
    payload: { body: text, ...extra },
  });
  assert.equal(res.statusCode, 201, res.body);
  return body(res).data.uuid;
}

/** Creates a comment through HTTP and returns its uuid. */
export async function createComment(
  t: TestApp,
  user: TestUser,
  postUuid: string,
  text: string,
  extra: { language?: string } = {},
): Promise<string> {
  const res = await t.inject({
    method: 'POST',
    url: `/posts/${postUuid}/comments`,
    token: user.token,
    payload: { body: text, ...extra },
  });
  assert.equal(res.statusCode, 201, res.body);
  return body(res).data.uuid;
}

/** GET with a token (the guest's by default), expecting 200; returns the parsed body. */
export async function get(t: TestApp, url: string, token?: string) {
  const res = await t.inject({ method: 'GET', url, token: token ?? t.guest });
  assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
  return body(res);
}

/** The tag of a type whose name matches (ignoring case and accents), through the public list. */
export async function findTag(t: TestApp, tagType: string, name: string) {
  const b = await get(
    t,
    `/tags?filterby[tag_type]=${tagType}&filterby[name][eq]=${encodeURIComponent(name)}`,
  );
  return b.data[0];
}

/** The associations of a target, through the public list. */
export async function associationsOf(t: TestApp, targetUuid: string, token?: string) {
  const b = await get(t, `/tag-associations?filterby[target_uuid]=${targetUuid}&limit=100`, token);
  return b.data as { uuid: string; tag_uuid: string; user_uuid: string; target_type: string }[];
}
