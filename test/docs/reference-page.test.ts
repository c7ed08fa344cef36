import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { ROOT, type RunningServer, startServer } from './support.ts';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = join(ROOT, 'docs', 'reference-page.png');

/** Installs Debian's chromium when missing; returns why it is unavailable, or undefined when it is there. */
function ensureChromium(): string | undefined {
  const res = spawnSync('bash', [join(ROOT, 'scripts', 'ensure-chromium.sh')], {
    encoding: 'utf8',
    timeout: 600_000,
  });
  return res.status === 0 ? undefined : (res.stderr || res.error?.message || 'unknown error').trim();
}

async function call(base: string, path: string, init: RequestInit & { token?: string } = {}) {
  const headers = new Headers(init.headers);
  if (init.token) headers.set('authorization', `Bearer ${init.token}`);
  const res = await fetch(`${base}${path}`, { ...init, headers });
  const text = await res.text();
  assert.ok(res.ok, `${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// The reference page at /docs opened in a real headless Chromium, as a newcomer would: the page, every operation,
// and one try-it call through Scalar's own console with a bearer token.
describe('API reference page in Chromium', () => {
  let server: RunningServer;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  let token: string;
  let postUuid: string;
  const consoleErrors: string[] = [];
  const foreignRequests: string[] = [];

  /** Records console errors, uncaught exceptions and requests to other hosts of a page. */
  function watch(p: Page): Page {
    p.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(`${m.text()} (${m.location().url})`);
    });
    p.on('pageerror', (e) => consoleErrors.push(`uncaught: ${e.message}`));
    p.on('request', (r) => {
      if (!r.url().startsWith(server.base) && !r.url().startsWith('data:')) foreignRequests.push(r.url());
    });
    return p;
  }

  /** Why the browser tests cannot run on this machine (chromium could not be installed), if so. */
  let unavailable: string | undefined;

  before(async () => {
    unavailable = ensureChromium();
    if (unavailable) {
      console.warn(`# Reference page browser tests SKIPPED: chromium could not be installed: ${unavailable}`);
      return;
    }
    const { chromium } = await import('playwright-core');
    server = await startServer();
    const base = server.base;
    // A user with a post the try-it search will find, made through the API like the README does.
    const { readFileSync } = await import('node:fs');
    const dev = JSON.parse(readFileSync(server.devClientFile, 'utf8'));
    const basic = `Basic ${Buffer.from(`${dev.client_id}:${dev.client_secret}`).toString('base64')}`;
    const form = (o: Record<string, string>) => new URLSearchParams(o).toString();
    const formHeaders = { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' };
    const guest = await call(base, '/oauth/token', {
      method: 'POST',
      headers: formHeaders,
      body: form({ grant_type: 'client_credentials' }),
    });
    await call(base, '/users', {
      method: 'POST',
      token: guest.access_token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        username: 'reader',
        email: 'reader@example.com',
        password: 'correct horse battery',
      }),
    });
    const login = await call(base, '/oauth/token', {
      method: 'POST',
      headers: formHeaders,
      body: form({ grant_type: 'password', username: 'reader', password: 'correct horse battery' }),
    });
    token = login.access_token;
    const post = await call(base, '/posts', {
      method: 'POST',
      token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ body: 'Reference pages deserve real browsers #docs', language: 'en' }),
    });
    postUuid = post.data.uuid;

    profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1440, height: 900 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = watch(context.pages()[0] ?? (await context.newPage()));
  });

  after(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await server?.stop();
  });

  it('loads /docs with no console error and no request to another host', async (t) => {
    if (unavailable) return t.skip(`chromium unavailable: ${unavailable}`);
    const res = await page.goto(`${server.base}/docs/`, { waitUntil: 'networkidle' });
    assert.equal(res?.status(), 200);
    await page.getByText('Authentication in two steps').first().waitFor();
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(foreignRequests, []);
  });

  it('lists every operation of /openapi.json, with the error codes', async (t) => {
    if (unavailable) return t.skip(`chromium unavailable: ${unavailable}`);
    const doc = await call(server.base, '/openapi.json');
    const operations: string[] = [];
    for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const method of Object.keys(item)) operations.push(`${method.toUpperCase()} ${path}`);
    }
    assert.ok(operations.length > 50, `only ${operations.length} operations`);
    // Open every group of the sidebar, as a reader would, so each operation is rendered.
    for (let i = 0; i < 40; i++) {
      const closed = page.getByRole('button', { name: /^Open Group - (?!Introduction|Models)/ });
      if ((await closed.count()) === 0) break;
      await closed.first().click();
    }
    await page.waitForTimeout(300);
    // biome-ignore lint/performance/useDomNodeTextContent: the rendered text, with the space a reader sees between method and path.
    const text = (await page.locator('body').innerText()).replace(/\s+/g, ' ');
    const missing = operations.filter((op) => !text.includes(op));
    assert.deepEqual(missing, [], 'operations missing from the page');
    for (const code of [
      'invalid_request',
      'unauthenticated',
      'login_required',
      'object_not_found',
      'rate_limited',
    ]) {
      assert.ok(text.includes(code), `the page names ${code}`);
    }
    assert.deepEqual(consoleErrors, []);
  });

  it('try-it: GET /search with a bearer token through Scalar returns the post', async (t) => {
    if (unavailable) return t.skip(`chromium unavailable: ${unavailable}`);
    // A fresh tab opened on the operation's link, as a reader following a link would.
    page = watch(await context.newPage());
    await page.goto(`${server.base}/docs/#tag/search/GET/search`, { waitUntil: 'networkidle' });
    // The token goes where a reader pastes it: Authentication -> Bearer Token.
    await page.getByPlaceholder('Token').first().fill(token);
    await page
      .locator('button', { hasText: /^Test Request\s*\(get \/search\)$/ })
      .first()
      .click();
    // The console opens with the documented example (query=hello); replace it with words of the post.
    const query = page.locator('.code-input-lite__editor[contenteditable=true]', { hasText: /^hello$/ });
    await query.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('real browsers');
    const responsePromise = page.waitForResponse((r) => new URL(r.url()).pathname === '/search');
    await page.getByRole('button', { name: /^Send/ }).first().click();
    const response = await responsePromise;
    const request = response.request();
    assert.equal(request.headers().authorization, `Bearer ${token}`);
    assert.equal(new URL(request.url()).searchParams.get('query'), 'real browsers');
    assert.equal(response.status(), 200);
    const body = await response.json();
    assert.ok(
      body.data.some((item: { uuid: string }) => item.uuid === postUuid),
      `the search found the post: ${JSON.stringify(body)}`,
    );
    // The answer is shown in the console's response pane.
    await page.getByText(postUuid).first().waitFor({ timeout: 10_000 });
    // The committed screenshot is refreshed on request only, so a test run leaves the work tree clean.
    if (process.env.UPDATE_SCREENSHOT === '1') await page.screenshot({ path: SCREENSHOT });
    assert.deepEqual(consoleErrors, []);
  });
});
