import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import type { Context } from '../../context.ts';
import { asksNoCache } from '../../http/cache-control.ts';
import { clientGone } from '../../http/client-gone.ts';
import { ListEnvelope, okList } from '../../http/envelope.ts';
import { renderAnswer, sendRendered } from '../../http/rendered.ts';
import {
  CompleteItemSchema,
  CompleteQuery,
  mentionSearchQuery,
  networkSearchQuery,
  SearchItemSchema,
  SearchNetworkSchema,
  SearchTagSchema,
  SearchUserSchema,
  searchQuery,
  TypedResultSchema,
  userSearchQuery,
} from './search.schemas.ts';
import * as service from './search.service.ts';

/** What one search operation declares; every search is a GET answering a list envelope. */
interface SearchRoute {
  path: string;
  access: 'public' | 'logged';
  summary: string;
  description?: string;
  querystring: TSchema;
  /** The schema of `data`. */
  data: TSchema;
  run: (viewer: string | null, query: service.SearchParams) => Promise<service.SearchResult<unknown>>;
}

/** The search operations: mixed, typed, users, friends, hashtags, mentions, networks and completion. */
export default async function searchRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const limitMax = ctx.config.PAGE_LIMIT_MAX;

  const route = (r: SearchRoute) =>
    app.get(
      r.path,
      {
        config: { access: r.access },
        schema: {
          tags: ['search'],
          summary: r.summary,
          ...(r.description ? { description: r.description } : {}),
          querystring: r.querystring,
          response: { 200: ListEnvelope(r.data) },
        },
      },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const viewer = request.auth?.userUuid ?? null;
        const query = request.query as service.SearchParams;
        const options = {
          fresh: asksNoCache(request.headers['cache-control']),
          version: request.readVersion,
          abandoned: clientGone(request),
          render: (found: service.SearchResult<unknown>) =>
            renderAnswer(reply, okList(found.data, found.count)),
        };
        const answer = await service.cachedAnswer(ctx, r.path, viewer, query, options, () =>
          r.run(viewer, query),
        );
        return sendRendered(reply, answer);
      },
    );

  route({
    path: '/search',
    access: 'public',
    summary: 'Search users, networks, posts, comments, media and messages, ranked together',
    description:
      'Every word must match, the last as a prefix. A query starting with # searches hashtags in the tag store instead. Only what the caller may see is searched.',
    querystring: searchQuery(limitMax),
    data: Type.Array(SearchItemSchema),
    run: (viewer, query) => service.search(ctx, viewer, query),
  });

  route({
    path: '/search/types',
    access: 'public',
    summary: 'Search with one result column per kind',
    description:
      'data holds every kind (user, network, post, comment, media, messages), each an array of up to limit items; a # query gives { tag: [...] }.',
    querystring: searchQuery(limitMax),
    data: TypedResultSchema,
    run: (viewer, query) => service.searchTypes(ctx, viewer, query),
  });

  route({
    path: '/search/users',
    access: 'public',
    summary: 'Search users by username, display name and bio',
    querystring: userSearchQuery(limitMax),
    data: Type.Array(SearchUserSchema),
    run: (viewer, query) => service.searchUsers(ctx, viewer, query, false),
  });

  route({
    path: '/search/friends',
    access: 'logged',
    summary: "Search the caller's confirmed friends",
    querystring: userSearchQuery(limitMax),
    data: Type.Array(SearchUserSchema),
    run: (viewer, query) => service.searchUsers(ctx, viewer, query, true),
  });

  route({
    path: '/search/hashtags',
    access: 'public',
    summary: 'Search hashtags of the tag store by prefix, tolerant of typos',
    description:
      'Only hashtags the caller may see: those used in something visible to them (or never used yet).',
    querystring: networkSearchQuery(limitMax),
    data: Type.Array(SearchTagSchema),
    run: (viewer, query) => service.searchHashtags(ctx, viewer, query),
  });

  route({
    path: '/search/mentions',
    access: 'logged',
    summary: "Users to mention by username prefix, the caller's friends first",
    querystring: mentionSearchQuery(limitMax),
    data: Type.Array(SearchUserSchema),
    // access 'logged' guarantees a user.
    run: (viewer, query) => service.searchMentions(ctx, viewer as string, query),
  });

  route({
    path: '/search/networks',
    access: 'public',
    summary: 'Search networks by name and description',
    querystring: networkSearchQuery(limitMax),
    data: Type.Array(SearchNetworkSchema),
    run: (viewer, query) => service.searchNetworks(ctx, viewer, query),
  });

  route({
    path: '/search/complete',
    access: 'public',
    summary:
      'Completion while typing: # hashtags, @ users to mention, otherwise users, networks and hashtags',
    querystring: CompleteQuery,
    data: Type.Array(CompleteItemSchema),
    run: (viewer, query) => service.complete(ctx, viewer, query),
  });
}
