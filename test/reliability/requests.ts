import fc from 'fast-check';
import qs from 'qs';
import type { Operation, Param } from './openapi-model.ts';

// biome-ignore lint/suspicious/noExplicitAny: generated bodies are any JSON.
type Json = any;

/** Real identifiers and tokens the generator mixes with random ones. */
export interface Pool {
  /** uuids of existing items by kind (user, post, comment, network, connection, message, media, karma, tag, tag-association). */
  uuids: Record<string, string[]>;
  /** Tokens by label (guest, owner, friend, stranger, admin). */
  tokens: Record<string, string>;
  /** Names that exist: usernames, hashtags, emotions. */
  words: string[];
  client: { id: string; secret: string };
  users: { username: string; password: string }[];
}

/** A request ready for inject. */
export interface GeneratedRequest {
  op: Operation;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  tokenLabel: string;
}

/** SQL, LIKE and full-text metacharacters of both engines. */
export const METACHARACTERS = [
  "'",
  '"',
  ';',
  '--',
  '/*',
  '*/',
  '%',
  '_',
  '\\',
  '*',
  'NEAR(',
  'OR',
  'AND',
  'NOT',
  '^',
  ':',
  '&',
  '|',
  '!',
  '(',
  ')',
];

const NASTY = [
  "' OR '1'='1",
  "'; DROP TABLE posts; --",
  '" OR ""="',
  '1; SELECT pg_sleep(10) --',
  "') UNION SELECT password_hash FROM users --",
  'a NEAR(b c, 2)',
  'title:secret',
  '^start',
  '"unclosed',
  '(a OR b) AND NOT c',
  'a & b | !c',
  'a:* & b',
  '%%%',
  '____',
  '\\%\\_\\',
  '*',
  '**',
  '{body}: x',
  '-a',
  '+a',
  '\u0000',
  '\ud800',
  'ﬁ ß İ ǅ',
  'e\u0301\u0301\u0301',
  '👩‍👩‍👧‍👦🏳️‍🌈',
  '\u202eevil',
  '𝕏𝔸𝕄',
  'Ω≈ç√∫',
  '#',
  '@',
  '#tag',
  '@user',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'null',
  'undefined',
  'NaN',
  '1e999',
  '-1',
  '0x10',
  '',
  ' ',
  '\n\t\r',
];

const KIND_OF_SEGMENT: Record<string, string> = {
  users: 'user',
  posts: 'post',
  comments: 'comment',
  networks: 'network',
  connections: 'connection',
  messages: 'message',
  media: 'media',
  karma: 'karma',
  tags: 'tag',
  'tag-associations': 'tag-association',
};

const BIG = 'x'.repeat(10 * 1024);

/** Strings with metacharacters, unicode and sizes that stress parsers and SQL builders. */
export function nastyString(pool: Pool): fc.Arbitrary<string> {
  const meta = fc.constantFrom(...METACHARACTERS);
  const word = fc.constantFrom(...(pool.words.length > 0 ? pool.words : ['word']));
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...NASTY) },
    {
      weight: 4,
      arbitrary: fc
        .array(fc.oneof(meta, word, fc.constantFrom(' ', 'a', '1')), { minLength: 1, maxLength: 8 })
        .map((parts) => parts.join('')),
    },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
    { weight: 1, arbitrary: fc.constantFrom(BIG, `${BIG}%`, `#${'a'.repeat(300)}`, '€'.repeat(5000)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 201, minLength: 199 }) },
  );
}

/** Numbers that are out of range, huge, negative or not numbers at all. */
function nastyNumber(): fc.Arbitrary<string | number> {
  return fc.oneof(
    fc.integer(),
    fc.constantFrom(
      -1,
      0,
      1,
      99,
      100,
      101,
      10000,
      10001,
      2 ** 31,
      2 ** 53,
      -(2 ** 63),
      1e308,
      -0,
      '1e999',
      '-1e999',
      'NaN',
      'Infinity',
      '-Infinity',
      '0x10',
      '1.5',
      '01',
      ' 1',
      '9'.repeat(400),
    ),
  );
}

function uuidFor(pool: Pool, kind: string | undefined): fc.Arbitrary<string> {
  const real = kind ? (pool.uuids[kind] ?? []) : Object.values(pool.uuids).flat();
  const options: fc.Arbitrary<string>[] = [fc.uuid()];
  if (real.length > 0) options.push(fc.constantFrom(...real), fc.constantFrom(...real));
  const all = Object.values(pool.uuids).flat();
  if (all.length > 0) options.push(fc.constantFrom(...all));
  return fc.oneof(...options);
}

/** A value that fits a JSON schema (roughly: the shapes the document uses). */
function validValue(schema: Json, pool: Pool, kind: string | undefined, name: string): fc.Arbitrary<Json> {
  if (!schema || typeof schema !== 'object') return fc.string({ maxLength: 10 });
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s: Json) => validValue(s, pool, kind, name)));
  switch (schema.type) {
    case 'integer':
      return fc.integer({ min: schema.minimum ?? 0, max: Math.min(schema.maximum ?? 1000, 1_000_000) });
    case 'number':
      return fc.double({ min: schema.minimum ?? 0, max: schema.maximum ?? 1000, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(validValue(schema.items, pool, kind, name), {
        maxLength: Math.min(schema.maxItems ?? 5, 5),
      });
    case 'object': {
      const props = schema.properties ?? {};
      const required: string[] = schema.required ?? [];
      const model: Record<string, fc.Arbitrary<Json>> = {};
      for (const [k, s] of Object.entries<Json>(props))
        model[k] = validValue(s, pool, kindOfField(k, kind), k);
      return fc.record(model, { requiredKeys: required.filter((k) => k in model) });
    }
    default: {
      if (schema.format === 'uuid' || /uuid$/.test(name)) return uuidFor(pool, kind);
      if (schema.format === 'email') return fc.emailAddress();
      const min = schema.minLength ?? 0;
      const max = Math.min(schema.maxLength ?? 60, 60);
      if (/^(body|description|bio|title|query)$/.test(name)) {
        const words = pool.words.length > 0 ? pool.words : ['word'];
        return fc
          .array(fc.constantFrom(...words, '#fuzz', '@alice', 'hello', '#Café'), {
            minLength: 1,
            maxLength: 6,
          })
          .map((w) => w.join(' ').slice(0, schema.maxLength ?? 200) || 'x');
      }
      if (name === 'password') return fc.constantFrom('pw-secret-123', pool.users[0]?.password ?? 'x');
      if (name === 'username') return fc.constantFrom(...pool.users.map((u) => u.username), 'newuser_1');
      if (name === 'grant_type') return fc.constantFrom('client_credentials', 'password', 'refresh_token');
      if (name === 'client_id') return fc.constant(pool.client.id);
      if (name === 'client_secret') return fc.constant(pool.client.secret);
      if (name === 'name') return fc.constantFrom('like', 'love', 'haha', 'wow', 'sad', 'angry', 'nope');
      return fc.string({ minLength: Math.min(min, max), maxLength: Math.max(min, max) });
    }
  }
}

function kindOfField(field: string, parent: string | undefined): string | undefined {
  if (field === 'user_uuid' || field === 'recipient_uuid' || field === 'target_user_uuid') return 'user';
  if (field === 'post_uuid') return 'post';
  if (field === 'network_uuid') return 'network';
  if (field === 'tag_uuid') return 'tag';
  if (field === 'target_uuid') return undefined;
  return parent;
}

/** A value of the wrong kind for any field. */
function wrongValue(pool: Pool): fc.Arbitrary<Json> {
  return fc.oneof(
    nastyString(pool),
    nastyNumber(),
    fc.constantFrom(true, false, null, [], {}, [1, 2], { a: { b: { c: { d: 1 } } } }),
    fc.array(nastyString(pool), { maxLength: 3 }),
    deepObject(),
  );
}

function deepObject(): fc.Arbitrary<Json> {
  return fc.integer({ min: 5, max: 60 }).map((depth) => {
    let v: Json = 1;
    for (let i = 0; i < depth; i++) v = { a: v };
    return v;
  });
}

/** An object with own `__proto__` / `constructor` keys (JSON.parse keeps them as own properties). */
function pollute(target: Record<string, Json>, which: number): void {
  const key = ['__proto__', 'constructor', 'prototype'][which % 3] as string;
  Object.defineProperty(target, key, {
    value: which % 2 === 0 ? { polluted: true, isAdmin: true } : { prototype: { polluted: 1 } },
    enumerable: true,
    configurable: true,
    writable: true,
  });
}

/** A body for an operation: valid, mutated in one or more fields, or of the wrong shape altogether. */
function bodyFor(schema: Json, pool: Pool, kind: string | undefined): fc.Arbitrary<Json> {
  const valid = validValue(schema, pool, kind, 'body');
  const fields = Object.keys(schema?.properties ?? {});
  return fc.oneof(
    { weight: 5, arbitrary: valid },
    {
      weight: 5,
      arbitrary: fc
        .tuple(
          valid,
          fc.array(
            fc.tuple(fc.constantFrom(...fields, 'unknown_field', 'role', 'karma', 'uuid'), wrongValue(pool)),
            {
              minLength: 1,
              maxLength: 3,
            },
          ),
          fc.integer({ min: 0, max: 11 }),
        )
        .map(([base, changes, p]) => {
          const out = { ...(typeof base === 'object' && base ? base : {}) };
          for (const [k, v] of changes) out[k] = v;
          if (p < 6) pollute(out, p);
          return out;
        }),
    },
    { weight: 1, arbitrary: wrongValue(pool) },
  );
}

function encodeBody(value: Json, asForm: boolean): string {
  if (asForm && value && typeof value === 'object' && !Array.isArray(value)) {
    return qs.stringify(value, { arrayFormat: 'brackets', allowDots: false });
  }
  return JSON.stringify(value) ?? 'null';
}

/** Query parameters for an operation: each valid, mutated, repeated or nested; plus sortby/filterby and extras. */
function queryFor(op: Operation, pool: Pool): fc.Arbitrary<string> {
  const parts: fc.Arbitrary<string>[] = [];
  const wrong = wrongValue(pool);
  for (const p of op.params.filter((x) => x.in === 'query')) {
    if (p.name === 'sortby' || p.name === 'filterby') continue;
    const value =
      p.name === 'uuids' || p.name === 'exclude_user_uuids'
        ? uuidList(pool)
        : validValue(p.schema, pool, undefined, p.name);
    parts.push(
      fc
        .oneof(
          { weight: p.required ? 6 : 3, arbitrary: value.map((v) => ({ [p.name]: v })) },
          { weight: 3, arbitrary: fc.constant({}) },
          // Numeric parameters get out-of-range and non-finite numbers more often than other wrong values.
          {
            weight: 2,
            arbitrary: (p.schema?.type === 'integer' ? fc.oneof(nastyNumber(), wrong) : wrong).map((v) => ({
              [p.name]: v,
            })),
          },
          { weight: 1, arbitrary: fc.tuple(value, value).map(([a, b]) => ({ [p.name]: [a, b] })) },
        )
        .map((o) => qs.stringify(o, { arrayFormat: 'repeat' })),
    );
  }
  if (op.params.some((p) => p.name === 'sortby')) parts.push(sortby(op, pool));
  if (op.params.some((p) => p.name === 'filterby')) parts.push(filterby(op, pool));
  parts.push(
    fc.oneof(
      { weight: 8, arbitrary: fc.constant('') },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          '__proto__[polluted]=1',
          'constructor[prototype][polluted]=1',
          '__proto__.polluted=1',
          'a[b][c][d][e][f]=1',
          'unknown=1',
          `${'x'.repeat(2000)}=1`,
          'limit=1&limit=2&limit=3',
          `${Array.from({ length: 150 }, (_, i) => `p${i}=1`).join('&')}`,
          'offset[]=1',
          'query[$gt]=',
          '%00=%00',
          '%=%',
          'a=%E0%A4%A',
        ),
      },
      { weight: 1, arbitrary: wrong.map((v) => qs.stringify({ [`x${typeof v}`]: v })) },
    ),
  );
  return fc.tuple(...parts).map((xs) => xs.filter(Boolean).join('&'));
}

function uuidList(pool: Pool): fc.Arbitrary<Json> {
  const one = uuidFor(pool, undefined);
  return fc.oneof(
    fc.array(one, { minLength: 1, maxLength: 100 }).map((a) => a.join(',')),
    fc.array(one, { minLength: 1, maxLength: 101 }),
    fc.array(fc.oneof(one, nastyString(pool)), { minLength: 1, maxLength: 5 }).map((a) => a.join(',')),
    fc.constantFrom(',', ',,,', '', 'not-a-uuid'),
  );
}

function propertyName(known: string[], pool: Pool): fc.Arbitrary<string> {
  const options: fc.Arbitrary<string>[] = [
    fc.constantFrom(...METACHARACTERS),
    fc.constantFrom(
      'password_hash',
      'email',
      'token_hash',
      'name; DROP TABLE tags',
      'name"--',
      "name' --",
      'lower(name)',
      '(select 1)',
      '__proto__',
      'constructor',
      'hasOwnProperty',
      'user_uuid',
      'uuid',
    ),
    nastyString(pool),
  ];
  if (known.length > 0) options.unshift(fc.constantFrom(...known), fc.constantFrom(...known));
  return fc.oneof(...options);
}

function sortby(op: Operation, pool: Pool): fc.Arbitrary<string> {
  const dir = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('asc', 'desc', 'ASC', 'DESC') },
    { weight: 1, arbitrary: nastyString(pool) },
  );
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant('') },
    {
      weight: 5,
      arbitrary: fc
        .array(fc.tuple(propertyName(op.sortable, pool), dir), { minLength: 1, maxLength: 7 })
        .map((entries) =>
          entries.map(([p, d]) => `sortby[${encodeSegment(p)}]=${encodeSegment(d)}`).join('&'),
        ),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'sortby=name',
        'sortby[]=asc',
        'sortby[name][x]=asc',
        'sortby[name]=asc&sortby[name]=desc',
      ),
    },
  );
}

function filterby(op: Operation, pool: Pool): fc.Arbitrary<string> {
  const ops = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('eq', 'gt', 'ge', 'lt', 'le', 'ne', 'like') },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom(...METACHARACTERS),
        fc.constantFrom('__proto__', 'constructor', 'in', 'EQ', '='),
      ),
    },
  );
  const value = fc.oneof(
    uuidFor(pool, undefined),
    nastyString(pool),
    nastyNumber().map(String),
    fc.constantFrom(
      '%',
      '%a%',
      '_',
      '\\',
      'hashtag',
      'emotion',
      'mention',
      'post',
      'comment',
      '2026-01-01T00:00:00.000Z',
      'en',
    ),
    fc.constantFrom(...(pool.words.length > 0 ? pool.words : ['w'])).map((w) => `%${w.slice(1)}`),
  );
  const clause = fc.oneof(
    fc
      .tuple(propertyName(op.filterable, pool), ops, value)
      .map(([p, o, v]) => `filterby[${encodeSegment(p)}][${encodeSegment(o)}]=${encodeSegment(v)}`),
    fc
      .tuple(propertyName(op.filterable, pool), value)
      .map(([p, v]) => `filterby[${encodeSegment(p)}]=${encodeSegment(v)}`),
  );
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant('') },
    { weight: 5, arbitrary: fc.array(clause, { minLength: 1, maxLength: 12 }).map((c) => c.join('&')) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'filterby=x',
        'filterby[name][eq][deep]=1',
        'filterby[name][eq]=a&filterby[name][eq]=b',
        'filterby[][eq]=1',
      ),
    },
  );
}

function pathValue(op: Operation, param: Param, pool: Pool): fc.Arbitrary<string> {
  const segments = op.path.split('/').filter(Boolean);
  const before = segments[segments.indexOf(`{${param.name}}`) - 1] ?? '';
  if (param.name === 'name') {
    return fc.oneof(fc.constantFrom('like', 'love', 'haha', 'wow', 'sad', 'angry'), nastyString(pool));
  }
  return fc.oneof(
    { weight: 6, arbitrary: uuidFor(pool, KIND_OF_SEGMENT[before]) },
    { weight: 1, arbitrary: nastyString(pool) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '00000000-0000-0000-0000-000000000000',
        'ffffffff-ffff-ffff-ffff-ffffffffffff',
        '0',
        '-1',
        '..',
        '%2e%2e',
      ),
    },
  );
}

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

function multipart(fields: Record<string, string>, file: Buffer | null): { body: Buffer; type: string } {
  const boundary = `----fuzz${Math.random().toString(16).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  if (file) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
      ),
      file,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

/** Percent-encodes a path segment; lone surrogates become the (invalid) UTF-8 of a surrogate on purpose. */
function encodeSegment(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return value
      .split(/([\ud800-\udfff])/)
      .map((part) => (/^[\ud800-\udfff]$/.test(part) ? '%ED%A0%80' : encodeURIComponent(part)))
      .join('');
  }
}

/** Generates requests over every operation of the document. */
export function requestArbitrary(ops: Operation[], pool: Pool): fc.Arbitrary<GeneratedRequest> {
  // Real tokens most of the time, so requests get past the access check and reach the handlers.
  const token = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...Object.keys(pool.tokens)) },
    { weight: 1, arbitrary: fc.constantFrom('none', 'garbage', 'basic') },
  );
  const perOp = ops.map((op) => {
    const pathParams = op.params.filter((p) => p.in === 'path');
    const path = fc.tuple(...pathParams.map((p) => pathValue(op, p, pool))).map((values) => {
      let url = op.path;
      pathParams.forEach((p, i) => {
        url = url.replace(`{${p.name}}`, encodeSegment(values[i] as string));
      });
      return url;
    });
    const types = Object.keys(op.body);
    const kind = KIND_OF_SEGMENT[op.path.split('/')[1] ?? ''];
    const bodyArb: fc.Arbitrary<{ payload?: string | Buffer; type?: string }> =
      types.length === 0
        ? fc.oneof(
            { weight: 6, arbitrary: fc.constant({}) },
            {
              weight: 1,
              arbitrary: wrongValue(pool).map((v) => ({
                payload: JSON.stringify(v) ?? 'null',
                type: 'application/json',
              })),
            },
          )
        : types.includes('multipart/form-data')
          ? fc
              .tuple(
                validValue(op.body['multipart/form-data'], pool, 'media', 'body'),
                fc.constantFrom<'png' | 'junk' | 'none'>('png', 'png', 'junk', 'none'),
                fc.boolean(),
              )
              .map(([fields, file, mutate]) => {
                const f: Record<string, string> = {};
                for (const [k, v] of Object.entries<Json>(fields)) if (k !== 'file') f[k] = String(v);
                if (mutate) f.title = `${BIG}${METACHARACTERS.join('')}`;
                const m = multipart(
                  f,
                  file === 'png' ? PNG : file === 'junk' ? Buffer.from('<?php echo 1; ?>') : null,
                );
                return { payload: m.body, type: m.type };
              })
          : fc
              .tuple(bodyFor(op.body[types[0] as string], pool, kind), fc.integer({ min: 0, max: 19 }))
              .map(([value, r]) => {
                if (r === 0) return {};
                if (r === 1) return { payload: '{"body": "x", ', type: 'application/json' };
                if (r === 2) return { payload: JSON.stringify(value), type: 'text/plain' };
                const asForm = r < 6;
                return {
                  payload: encodeBody(value, asForm),
                  type: asForm ? 'application/x-www-form-urlencoded' : 'application/json',
                };
              });
    const override = op.params.some((p) => p.in === 'header' && p.name === 'x-http-method-override')
      ? fc.constantFrom(undefined, undefined, 'DELETE', 'PATCH', 'delete', 'GET', "';--")
      : fc.constant(undefined);
    return fc
      .tuple(path, queryFor(op, pool), bodyArb, token, override)
      .map(([url, query, b, t, ov]): GeneratedRequest => {
        const headers: Record<string, string> = {};
        if (t === 'garbage') headers.authorization = `Bearer ${'A'.repeat(43)}`;
        else if (t === 'basic') headers.authorization = 'Basic Zm9vOmJhcg==';
        else if (t !== 'none' && pool.tokens[t]) headers.authorization = `Bearer ${pool.tokens[t]}`;
        if (b.type) headers['content-type'] = b.type;
        if (ov) headers['x-http-method-override'] = ov;
        const req: GeneratedRequest = {
          op,
          method: op.method,
          url: query ? `${url}?${query}` : url,
          headers,
          tokenLabel: t,
        };
        if (b.payload !== undefined) req.payload = b.payload;
        return req;
      });
  });
  return fc.oneof(...perOp);
}
