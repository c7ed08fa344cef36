import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MALFORMED_PARAMETER,
  malformedParameterOf,
  parseNested,
  parseQueryString,
} from '../../src/http/query-string.ts';
import { DROPPED_KEYS, prototypeKeysIn } from '../../src/http/text-input.ts';

const TEXTS = [
  'filterby[tag_type]=hashtag&sortby[associations_count]=desc&sortby[created_at]=asc&limit=20',
  'uuids=a&uuids=b&uuids=c',
  'uuids[]=a&uuids[]=b',
  'query=caf%C3%A9+au+lait&limit=5',
  'filterby[name][like]=con%25&page=2',
  'a[b][c][d][e]=deep',
  '',
];

describe('query string parsing', () => {
  it('gives what parseNested gives, the first time and every time after', () => {
    for (const text of TEXTS) {
      const expected = parseNested(text);
      for (let i = 0; i < 3; i++) assert.deepStrictEqual(parseQueryString(text), expected, text);
    }
  });

  it('gives each caller its own object, so one request coercing its query changes no other', () => {
    const text = 'filterby[tag_type]=hashtag&uuids=a&uuids=b&limit=20';
    const first = parseQueryString(text) as {
      limit: unknown;
      uuids: string[];
      filterby: Record<string, unknown>;
    };
    first.limit = 20;
    first.uuids.push('c');
    first.filterby.tag_type = 'emotion';
    (first as Record<string, unknown>).offset = 0;
    assert.deepStrictEqual(parseQueryString(text), {
      filterby: { tag_type: 'hashtag' },
      uuids: ['a', 'b'],
      limit: '20',
    });
  });

  it('marks prototype-member names every time, remembered or not', () => {
    for (const text of ['filterby[constructor][eq]=a', 'sortby[toString]=asc', '%5F%5Fproto%5F%5F[x]=1']) {
      for (let i = 0; i < 2; i++) assert.ok(DROPPED_KEYS in parseQueryString(text), text);
    }
  });

  it('marks the parameter of a malformed or non-UTF-8 percent escape every time, remembered or not', () => {
    for (const [text, parameter] of [
      ['query=caf%E9', 'query'],
      ['limit=5&filterby[name][eq]=100%25+%ZZ', 'filterby[name][eq]'],
      ['a=%', 'a'],
      ['filterby[constructor]%=x', 'filterby[constructor]%'],
      ['%E9t%C3%A9=1', '%E9t%C3%A9'],
    ]) {
      for (let i = 0; i < 2; i++) {
        const parsed = parseQueryString(text as string);
        assert.ok(MALFORMED_PARAMETER in parsed, text);
        assert.equal(malformedParameterOf(parsed), parameter, text);
      }
    }
    assert.deepStrictEqual(parseNested('query=caf%C3%A9+100%25&a+b=c+d'), {
      query: 'café 100%',
      'a b': 'c d',
    });
    assert.equal(malformedParameterOf(parseNested('query=caf%C3%A9')), undefined);
  });

  it('parses long and many distinct query strings alike, past what it remembers', () => {
    const long = `query=${'x'.repeat(2000)}&limit=3`;
    assert.deepStrictEqual(parseQueryString(long), { query: 'x'.repeat(2000), limit: '3' });
    for (let i = 0; i < 600; i++) assert.deepStrictEqual(parseQueryString(`page=${i}`), { page: String(i) });
    assert.deepStrictEqual(parseQueryString('page=0'), { page: '0' });
  });
});

describe('prototype-member names in a query string', () => {
  it('finds them plain, percent-escaped and nested, and not in values or longer names', () => {
    assert.deepStrictEqual(prototypeKeysIn('filterby[constructor][eq]=a'), ['filterby[constructor][eq]']);
    assert.deepStrictEqual(prototypeKeysIn('%63onstructor=1'), ['constructor']);
    assert.deepStrictEqual(prototypeKeysIn('a=1&valueOf=2'), ['valueOf']);
    // qs ends a name at `]=` when there is one, so this whole pair is one name, which it would drop silently.
    assert.deepStrictEqual(prototypeKeysIn('filterby=x[constructor]=y&limit=2'), ['filterby=x[constructor]']);
    assert.deepStrictEqual(prototypeKeysIn('a=1[__proto__]=2'), ['a=1[__proto__]']);
    assert.deepStrictEqual(prototypeKeysIn('query=constructor&limit=2'), []);
    assert.deepStrictEqual(prototypeKeysIn('filterby[name][like]=toString%25'), []);
    assert.deepStrictEqual(prototypeKeysIn('constructors=1&my_valueOf=2'), []);
    assert.deepStrictEqual(prototypeKeysIn('filterby[tag_type]=hashtag&limit=20'), []);
    // A broken escape in the name does not hide it: qs's own decoder keeps such a name as sent, then drops it.
    assert.deepStrictEqual(prototypeKeysIn('filterby[constructor]%=x'), ['filterby[constructor]%']);
    assert.deepStrictEqual(prototypeKeysIn('%ZZ[__proto__][x]=1'), ['%ZZ[__proto__][x]']);
  });
});
