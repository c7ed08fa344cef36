import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Context } from '../../context.ts';
import { DataEnvelope, ListEnvelope, ok, okList, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import {
  CreateMessageBody,
  type CreateMessageInput,
  MessageParams,
  MessageSchema,
  messageListQuery,
} from './message.schemas.ts';
import * as service from './message.service.ts';

type WithUuid = { Params: { uuid: string } };

/** Private messages: send, list, read, delete. */
export default async function messageRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const caller = (request: FastifyRequest) => request.auth?.userUuid as string;

  app.post<{ Body: CreateMessageInput }>(
    '/messages',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['messages'],
        summary: 'Send a private message',
        body: CreateMessageBody,
        response: { 201: DataEnvelope(MessageSchema) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(ok(await service.sendMessage(ctx, caller(request), request.body))),
  );

  app.get<{ Querystring: Record<string, unknown> }>(
    '/messages',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['messages'],
        summary: 'List the messages the caller sent or received (newest first unless sorted)',
        querystring: messageListQuery(ctx.config.PAGE_LIMIT_MAX),
        response: { 200: ListEnvelope(Type.Array(MessageSchema)) },
      },
    },
    async (request) => {
      const { data, count } = await service.listMessages(ctx, caller(request), request.query);
      return okList(data, count);
    },
  );

  app.get<WithUuid>(
    '/messages/:uuid',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['messages'],
        summary: 'Read a message (its sender or recipient only)',
        params: MessageParams,
        response: { 200: DataEnvelope(MessageSchema) },
      },
    },
    async (request) => ok(await service.getMessage(ctx, caller(request), request.params.uuid)),
  );

  app.post<WithUuid>(
    '/messages/:uuid/delete',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['messages'],
        summary: 'Delete a message (its sender only)',
        params: MessageParams,
        response: { 200: StatusEnvelope },
      },
    },
    async (request) => {
      await service.deleteMessage(ctx, caller(request), request.params.uuid);
      return okStatus();
    },
  );
}
