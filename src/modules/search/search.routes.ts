import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Context } from '../../context.ts';
import { ListEnvelope, okList } from '../../http/envelope.ts';
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

function viewerOf(request: FastifyRequest): string | null {
  return request.auth?.userUuid ?? null;
}

/** The search operations: mixed, typed, users, friends, hashtags, mentions, networks and completion. */
export default async function searchRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const limitMax = ctx.config.PAGE_LIMIT_MAX;
  const tags = ['search'];

  app.get(
    '/search',
    {
      config: { access: 'public' },
      schema: {
        tags,
        summary: 'Search users, networks, posts, comments, media and messages, ranked together',
        description:
          'Every word must match, the last as a prefix. A query starting with # searches hashtags in the tag store instead. Only what the caller may see is searched.',
        querystring: searchQuery(limitMax),
        response: { 200: ListEnvelope(Type.Array(SearchItemSchema)) },
      },
    },
    async (request) => {
      const r = await service.search(ctx, viewerOf(request), request.query as service.SearchParams);
      return okList(r.data, r.count);
    },
  );

  app.get(
    '/search/types',
    {
      config: { access: 'public' },
      schema: {
        tags,
        summary: 'Search with one result column per kind',
        description:
          'data holds every kind (user, network, post, comment, media, messages), each an array of up to limit items; a # query gives { tag: [...] }.',
        querystring: searchQuery(limitMax),
        response: { 200: ListEnvelope(TypedResultSchema) },
      },
    },
    async (request) => {
      const r = await service.searchTypes(ctx, viewerOf(request), request.query as service.SearchParams);
      return okList(r.data, r.count);
    },
  );

  app.get(
    '/search/users',
    {
      config: { access: 'public' },
      schema: {
        tags,
        summary: 'Search users by username, display name and bio',
        querystring: userSearchQuery(limitMax),
        response: { 200: ListEnvelope(Type.Array(SearchUserSchema)) },
      },
    },
    async (request) => {
      const r = await service.searchUsers(
        ctx,
        viewerOf(request),
        request.query as service.SearchParams,
        false,
      );
      return okList(r.data, r.count);
    },
  );

  app.get(
    '/search/friends',
    {
      config: { access: 'logged' },
      schema: {
        tags,
        summary: "Search the caller's confirmed friends",
        querystring: userSearchQuery(limitMax),
        response: { 200: ListEnvelope(Type.Array(SearchUserSchema)) },
      },
    },
    async (request) => {
      const r = await service.searchUsers(
        ctx,
        viewerOf(request),
        request.query as service.SearchParams,
        true,
      );
      return okList(r.data, r.count);
    },
  );

  app.get(
    '/search/hashtags',
    {
      config: { access: 'public' },
      schema: {
        tags,
        summary: 'Search hashtags of the tag store by prefix, tolerant of typos',
        querystring: networkSearchQuery(limitMax),
        response: { 200: ListEnvelope(Type.Array(SearchTagSchema)) },
      },
    },
    async (request) => {
      const r = await service.searchHashtags(ctx, request.query as service.SearchParams);
      return okList(r.data, r.count);
    },
  );

  app.get(
    '/search/mentions',
    {
      config: { access: 'logged' },
      schema: {
        tags,
        summary: "Users to mention by username prefix, the caller's friends first",
        querystring: mentionSearchQuery(limitMax),
        response: { 200: ListEnvelope(Type.Array(SearchUserSchema)) },
      },
    },
    async (request) => {
      const r = await service.searchMentions(
        ctx,
        viewerOf(request) as string,
        request.query as service.SearchParams,
      );
      return okList(r.data, r.count);
    },
  );

  app.get(
    '/search/networks',
    {
      config: { access: 'public' },
      schema: {
        tags,
        summary: 'Search networks by name and description',
        querystring: networkSearchQuery(limitMax),
        response: { 200: ListEnvelope(Type.Array(SearchNetworkSchema)) },
      },
    },
    async (request) => {
      const r = await service.searchNetworks(ctx, viewerOf(request), request.query as service.SearchParams);
      return okList(r.data, r.count);
    },
  );

  app.get(
    '/search/complete',
    {
      config: { access: 'public' },
      schema: {
        tags,
        summary:
          'Completion while typing: # hashtags, @ users to mention, otherwise users, networks and hashtags',
        querystring: CompleteQuery,
        response: { 200: ListEnvelope(Type.Array(CompleteItemSchema)) },
      },
    },
    async (request) => {
      const r = await service.complete(
        ctx,
        viewerOf(request),
        request.query as { query: string; limit?: number },
      );
      return okList(r.data, r.count);
    },
  );
}
