import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Context } from '../../context.ts';
import { DataEnvelope, ok, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import {
  CommentParams,
  CommentSchema,
  CreateCommentBody,
  type CreateCommentInput,
  UpdateCommentBody,
  type UpdateCommentInput,
} from './comment.schemas.ts';
import * as service from './comment.service.ts';

type WithUuid = { Params: { uuid: string } };

/** Comments: add to a visible post, read (if the post is visible), update, delete. */
export default async function commentRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const viewer = (request: FastifyRequest) => request.auth?.userUuid ?? null;
  const owner = async (request: FastifyRequest, c: Context) =>
    service.commentOwner(c, (request.params as { uuid: string }).uuid, viewer(request));

  app.post<WithUuid & { Body: CreateCommentInput }>(
    '/posts/:uuid/comments',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['comments'],
        summary: 'Comment on a post the caller may see',
        params: CommentParams,
        body: CreateCommentBody,
        response: { 201: DataEnvelope(CommentSchema) },
      },
    },
    async (request, reply) => {
      const comment = await service.createComment(
        ctx,
        viewer(request) as string,
        request.params.uuid,
        request.body,
      );
      return reply.status(201).send(ok(comment));
    },
  );

  app.get<WithUuid>(
    '/comments/:uuid',
    {
      config: { access: 'public' },
      schema: {
        tags: ['comments'],
        summary: 'Read a comment whose post the caller may see',
        params: CommentParams,
        response: { 200: DataEnvelope(CommentSchema) },
      },
    },
    async (request) => ok(await service.getComment(ctx, request.params.uuid, viewer(request))),
  );

  app.post<WithUuid & { Body: UpdateCommentInput }>(
    '/comments/:uuid/update',
    {
      config: { access: 'owner', owner, ownerKind: 'comment' },
      schema: {
        tags: ['comments'],
        summary: 'Update a comment (its author only)',
        params: CommentParams,
        body: UpdateCommentBody,
        response: { 200: DataEnvelope(CommentSchema) },
      },
    },
    async (request) => ok(await service.updateComment(ctx, request.params.uuid, request.body)),
  );

  app.post<WithUuid>(
    '/comments/:uuid/delete',
    {
      config: { access: 'owner', owner, ownerKind: 'comment' },
      schema: {
        tags: ['comments'],
        summary: 'Delete a comment (its author only)',
        params: CommentParams,
        response: { 200: StatusEnvelope },
      },
    },
    async (request) => {
      await service.deleteComment(ctx, request.params.uuid);
      return okStatus();
    },
  );
}
