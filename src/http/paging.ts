import { Type } from 'typebox';
import { ApiError, type ErrorDetail } from './errors.ts';

/**
 * Largest offset a list accepts, as for searches (SEARCH_MAX_OFFSET): every skipped row is still read, checked for
 * visibility and dropped, so deeper pages cost more than they are worth; narrow the filter instead.
 */
export const LIST_MAX_OFFSET = 10_000;

/** Page size when none is asked for (PAGE_LIMIT_MAX when that is smaller). */
const DEFAULT_LIMIT = 20;

/** Query-string properties of paging, for route schemas. */
export function pagingQuery(limitMax: number) {
  return {
    offset: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Items to skip (do not combine with page).' }),
    ),
    page: Type.Optional(
      Type.Integer({ minimum: 1, description: 'Page number from 1; offset = (page-1) * limit.' }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: limitMax,
        // A PAGE_LIMIT_MAX below the usual default lowers the default too, or every request without one is a 400.
        default: Math.min(DEFAULT_LIMIT, limitMax),
        description: `Page size, 1 to ${limitMax}.`,
      }),
    ),
  };
}

/** The applied window of a list. */
export interface Window {
  offset: number;
  limit: number;
}

/** Turns offset/page/limit into an offset and limit; both offset and page, or an offset past maxOffset, is a 400. */
export function resolveWindow(
  query: { offset?: number | undefined; page?: number | undefined; limit?: number | undefined },
  maxOffset: number,
): Window {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const details: ErrorDetail[] = [];
  if (query.offset !== undefined && query.page !== undefined) {
    details.push({ field: 'page', message: 'give either page or offset, not both' });
  }
  const offset = query.offset ?? ((query.page ?? 1) - 1) * limit;
  if (offset > maxOffset) {
    details.push({
      field: query.page !== undefined ? 'page' : 'offset',
      message: `the offset may be at most ${maxOffset}; narrow the filter (filterby, e.g. a created_at range) or reverse the sort instead of paging deeper`,
    });
  }
  if (details.length > 0) {
    throw new ApiError('invalid_request', details.map((d) => `${d.field}: ${d.message}`).join('; '), details);
  }
  return { offset, limit };
}
