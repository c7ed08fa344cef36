import { Type } from 'typebox';
import { ApiError, type ErrorDetail } from './errors.ts';

/** Largest offset a list accepts; deeper pages are a scan nobody needs (searches use SEARCH_MAX_OFFSET). */
export const LIST_MAX_OFFSET = 100_000;

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
        default: 20,
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
  const limit = query.limit ?? 20;
  const details: ErrorDetail[] = [];
  if (query.offset !== undefined && query.page !== undefined) {
    details.push({ field: 'page', message: 'give either page or offset, not both' });
  }
  const offset = query.offset ?? ((query.page ?? 1) - 1) * limit;
  if (offset > maxOffset) {
    details.push({
      field: query.page !== undefined ? 'page' : 'offset',
      message: `the offset may be at most ${maxOffset}; narrow the query instead of paging deeper`,
    });
  }
  if (details.length > 0) {
    throw new ApiError('invalid_request', details.map((d) => `${d.field}: ${d.message}`).join('; '), details);
  }
  return { offset, limit };
}
