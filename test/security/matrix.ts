import type { LightMyRequestResponse } from 'fastify';
import { uuidv7 } from '../../src/db/time.ts';
import { type AccessRow, routeKey } from './access-table.ts';
import {
  CALLERS,
  type Caller,
  type Case,
  type Cell,
  casesFor,
  comparable,
  tokenOf,
  type World,
} from './world.ts';

/** What a cell must answer. */
export type Expectation =
  | { kind: 'allowed' }
  | { kind: 'refused'; status: number; code: string }
  /** 404 object_not_found, byte-identical to the answer for a missing item. */
  | { kind: 'hidden' };

/** The answer DESIGN.md prescribes for one caller on one case of a route. */
export function expectation(row: AccessRow, kase: Case, caller: Caller): Expectation {
  if (row.access === 'none') return { kind: 'allowed' };
  if (caller === 'none' || caller === 'expired' || caller === 'revoked') {
    return { kind: 'refused', status: 401, code: 'unauthenticated' };
  }
  const reaches = (c: Caller) => kase.allowed === undefined || kase.allowed.includes(c);
  if (caller === 'guest') {
    if (row.access !== 'public') return { kind: 'refused', status: 403, code: 'login_required' };
    return reaches('guest') ? { kind: 'allowed' } : { kind: 'hidden' };
  }
  switch (row.access) {
    case 'admin':
      return caller === 'admin' ? { kind: 'allowed' } : { kind: 'refused', status: 403, code: 'forbidden' };
    case 'owner':
      return caller === 'owner' || (caller === 'admin' && row.adminOverride)
        ? { kind: 'allowed' }
        : { kind: 'hidden' };
    default:
      return reaches(caller) ? { kind: 'allowed' } : { kind: 'hidden' };
  }
}

/** One answer of the matrix, for later checks (data exposure). */
export interface Answer {
  row: AccessRow;
  caller: Caller;
  url: string;
  res: LightMyRequestResponse;
}

const ENVELOPE_FREE = new Set([
  'POST /oauth/token',
  'POST /oauth/revoke',
  'GET /openapi.json',
  'GET /metrics',
  'GET /docs',
  'GET /docs/',
  'GET /docs/js/scalar.js',
  'GET /favicon.ico',
  'GET /media/{}/file',
]);

/** Sends one cell's request. */
export function send(
  w: World,
  row: AccessRow,
  cell: Cell,
  token: string | undefined,
  method: string = row.method,
) {
  return w.t.inject({
    method: method as 'GET',
    url: cell.url,
    token,
    ...(cell.payload !== undefined ? { payload: cell.payload as object } : {}),
    ...(cell.headers ? { headers: cell.headers } : {}),
  });
}

/**
 * Drives every row of the table over every caller and every case; returns the list of cells that answered
 * otherwise than DESIGN.md says (empty when all is well) and the number of requests sent.
 */
export async function runMatrix(
  w: World,
  table: readonly AccessRow[],
  onAnswer?: (a: Answer) => void,
  options: { head?: boolean } = {},
): Promise<{ failures: string[]; requests: number; cells: number }> {
  const cases = casesFor(w);
  const failures: string[] = [];
  let requests = 0;
  let cells = 0;
  for (const row of table) {
    const key = routeKey(row.method, row.path);
    const rowCases = cases[key];
    if (!rowCases) {
      failures.push(`${key}: no cases in world.ts`);
      continue;
    }
    for (const kase of rowCases) {
      for (const caller of CALLERS) {
        cells++;
        const where = `${key} [${kase.name}] as ${caller}`;
        const fail = (msg: string) => failures.push(`${where}: ${msg}`);
        const exp = expectation(row, kase, caller);
        const cell = await kase.build(caller, exp.kind === 'allowed');
        const token = caller === 'owner' && cell.ownerToken ? cell.ownerToken : tokenOf(w, caller);
        const res = await send(w, row, cell, token);
        requests++;
        onAnswer?.({ row, caller, url: cell.url, res });
        // biome-ignore lint/suspicious/noExplicitAny: bodies are inspected freely.
        let b: any;
        try {
          b = JSON.parse(res.body);
        } catch {
          b = undefined;
        }
        if (exp.kind === 'allowed') {
          const ok = kase.ok ?? [200];
          if (!ok.includes(res.statusCode))
            fail(`expected ${ok.join('/')}, got ${res.statusCode} ${res.body.slice(0, 300)}`);
          else if (!ENVELOPE_FREE.has(key) && b?.status !== 'OK')
            fail(`no OK envelope: ${res.body.slice(0, 200)}`);
        } else {
          const status = exp.kind === 'hidden' ? 404 : exp.status;
          const code = exp.kind === 'hidden' ? 'object_not_found' : exp.code;
          if (res.statusCode !== status || b?.error?.code !== code) {
            fail(`expected ${status} ${code}, got ${res.statusCode} ${res.body.slice(0, 300)}`);
          }
          if (status === 401 && res.headers['www-authenticate'] !== 'Bearer')
            fail('401 without WWW-Authenticate: Bearer');
          if (exp.kind === 'hidden') {
            if (!cell.item || !cell.url.includes(cell.item)) {
              fail('hidden cell without an item to compare with a missing one');
            } else {
              const twin = await send(w, row, { ...cell, url: cell.url.replace(cell.item, uuidv7()) }, token);
              requests++;
              onAnswer?.({ row, caller, url: cell.url, res: twin });
              if (comparable(twin) !== comparable(res)) {
                fail(
                  `refusal differs from a missing item:\n    refused: ${comparable(res)}\n    missing: ${comparable(twin)}`,
                );
              }
            }
          }
        }
        if (cell.exists) {
          const there = await cell.exists();
          if (exp.kind === 'allowed' && there) fail('allowed delete left the item in place');
          if (exp.kind !== 'allowed' && !there) fail('refused request deleted the item');
        }
        if (row.access !== 'none' && !['none', 'expired', 'revoked'].includes(caller)) {
          if (!String(res.headers['cache-control'] ?? '').includes('no-store')) {
            fail(`authenticated answer without Cache-Control: no-store (${res.headers['cache-control']})`);
          }
        }
        if (row.method === 'GET' && options.head !== false) {
          const head = await send(w, row, cell, token, 'HEAD');
          requests++;
          if (head.statusCode !== res.statusCode)
            fail(`HEAD answered ${head.statusCode}, GET ${res.statusCode}`);
        }
      }
    }
  }
  return { failures, requests, cells };
}
