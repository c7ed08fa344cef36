import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Context } from '../../context.ts';
import { DataEnvelope, ok, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import {
  CreatePostBody,
  type CreatePostInput,
  PostParams,
  PostSchema,
  UpdatePostBody,
  type UpdatePostInput,
} from './post.schemas.ts';
import * as service from './post.service.ts';

type WithUuid = { Params: { uuid: string } };

/** Posts: create, read (if visible), update, delete. */
export default async function postRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const viewer = (request: FastifyRequest) => request.auth?.userUuid ?? null;
  const owner = async (request: FastifyRequest, c: Context) =>
    service.postOwner(c, (request.params as { uuid: string }).uuid);

  app.post<{ Body: CreatePostInput }>(
    '/posts',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['posts'],
        summary: 'Create a post',
        body: CreatePostBody,
        response: { 201: DataEnvelope(PostSchema) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(ok(await service.createPost(ctx, viewer(request) as string, request.body))),
  );

  app.get<WithUuid>(
    '/posts/:uuid',
    {
      config: { access: 'public' },
      schema: {
        tags: ['posts'],
        summary: 'Read a post the caller may see',
        params: PostParams,
        response: { 200: DataEnvelope(PostSchema) },
      },
    },
    async (request) => ok(await service.getPost(ctx, request.params.uuid, viewer(request))),
  );

  app.post<WithUuid & { Body: UpdatePostInput }>(
    '/posts/:uuid/update',
    {
      config: { access: 'owner', owner, ownerKind: 'post' },
      schema: {
        tags: ['posts'],
        summary: 'Update a post (its author only)',
        params: PostParams,
        body: UpdatePostBody,
        response: { 200: DataEnvelope(PostSchema) },
      },
    },
    async (request) => ok(await service.updatePost(ctx, request.params.uuid, request.body)),
  );

  app.post<WithUuid>(
    '/posts/:uuid/delete',
    {
      config: { access: 'owner', owner, ownerKind: 'post' },
      schema: {
        tags: ['posts'],
        summary: 'Delete a post and its comments (its author only)',
        params: PostParams,
        response: { 200: StatusEnvelope },
      },
    },
    async (request) => {
      await service.deletePost(ctx, request.params.uuid);
      return okStatus();
    },
  );
}
