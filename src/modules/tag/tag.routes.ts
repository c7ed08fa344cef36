import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Context } from '../../context.ts';
import { asksNoCache } from '../../http/cache-control.ts';
import { clientGone } from '../../http/client-gone.ts';
import { DataEnvelope, ListEnvelope, ok, okList, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import { invalidField } from '../../http/errors.ts';
import { renderAnswer, sendRendered } from '../../http/rendered.ts';
import type { TagType } from './normalize.ts';
import {
  TagBody,
  TagSchema,
  TagUuidParams,
  TrendingQuery,
  TrendingTagSchema,
  tagListQuery,
  UuidParams,
} from './tag.schemas.ts';
import {
  createTag,
  deleteTag,
  getTag,
  listTags,
  TAG_WHITELIST,
  trendingHashtags,
  updateTag,
} from './tag.service.ts';

/** The caller's user uuid, or null for a guest: whose view of association visibility applies. */
function viewer(request: FastifyRequest): string | null {
  return request.auth?.userUuid ?? null;
}

/** The tag operations: reads (public) and the switchable writes. */
export default async function tagRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;

  app.get(
    '/tags/trending',
    {
      config: { access: 'public' },
      schema: {
        tags: ['tags'],
        summary: 'Trending hashtags: ranked by distinct users in a recent window, with uses per hour',
        querystring: TrendingQuery,
        response: { 200: DataEnvelope(Type.Array(TrendingTagSchema)) },
      },
    },
    async (request) => {
      const q = request.query as { window?: number; limit?: number };
      const options = { window: q.window ?? 24, limit: q.limit ?? 10 };
      return ok(await trendingHashtags(ctx, options, viewer(request), clientGone(request)));
    },
  );

  app.get(
    '/tags/:tag_uuid',
    {
      config: { access: 'public' },
      schema: {
        tags: ['tags'],
        summary: 'One tag',
        params: TagUuidParams,
        response: { 200: DataEnvelope(TagSchema) },
      },
    },
    async (request, reply) => {
      const uuid = (request.params as { tag_uuid: string }).tag_uuid;
      const answer = await getTag(ctx, uuid, viewer(request), {
        fresh: asksNoCache(request.headers['cache-control']),
        version: request.readVersion,
        render: (tag) => renderAnswer(reply, ok(tag)),
      });
      return sendRendered(reply, answer);
    },
  );

  app.get(
    '/tags',
    {
      config: { access: 'public' },
      // The spec: the tag list accepts no language parameter; say so instead of a generic unknown-parameter error.
      preValidation: async (request) => {
        if (Object.hasOwn((request.query ?? {}) as object, 'language')) {
          throw invalidField(
            'language',
            'the tag list takes no language parameter (tags have no language); filter GET /tag-associations by language instead',
          );
        }
      },
      schema: {
        tags: ['tags'],
        summary: 'List tags with paging, sortby, filterby or uuids',
        querystring: tagListQuery(ctx.config.PAGE_LIMIT_MAX, TAG_WHITELIST),
        response: { 200: ListEnvelope(Type.Array(TagSchema)) },
      },
    },
    async (request, reply) => {
      const query = request.query as Record<string, unknown>;
      const answer = await listTags(ctx, query, viewer(request), {
        fresh: asksNoCache(request.headers['cache-control']),
        version: request.readVersion,
        abandoned: clientGone(request),
        render: (page) => renderAnswer(reply, okList(page.data, page.count)),
      });
      return sendRendered(reply, answer);
    },
  );

  app.post(
    '/tags/create',
    {
      config: { access: 'logged', operation: 'tags.create' },
      schema: {
        tags: ['tags'],
        summary: 'Create a tag (disabled unless ENABLED_OPERATIONS names tags.create)',
        body: TagBody,
        response: { 201: DataEnvelope(TagSchema) },
      },
    },
    async (request, reply) => {
      const body = request.body as { name: string; tag_type: TagType };
      reply.status(201);
      return ok(await createTag(ctx, body, viewer(request)));
    },
  );

  app.post(
    '/tags/:uuid/delete',
    {
      config: { access: 'admin', operation: 'tags.delete' },
      schema: {
        tags: ['tags'],
        summary:
          'Delete a tag and its associations (admin; disabled unless ENABLED_OPERATIONS names tags.delete)',
        params: UuidParams,
        response: { 200: StatusEnvelope },
      },
    },
    async (request) => {
      await deleteTag(ctx, (request.params as { uuid: string }).uuid);
      return okStatus();
    },
  );

  app.put(
    '/tags/:tag_uuid/update',
    {
      config: { access: 'admin', operation: 'tags.update' },
      schema: {
        tags: ['tags'],
        summary: 'Rename or retype a tag (admin; disabled unless ENABLED_OPERATIONS names tags.update)',
        params: TagUuidParams,
        body: TagBody,
        response: { 200: DataEnvelope(TagSchema) },
      },
    },
    async (request) => {
      const body = request.body as { name: string; tag_type: TagType };
      return ok(
        await updateTag(ctx, (request.params as { tag_uuid: string }).tag_uuid, body, viewer(request)),
      );
    },
  );
}
