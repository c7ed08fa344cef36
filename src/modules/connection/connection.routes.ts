import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Context } from '../../context.ts';
import { DataEnvelope, ListEnvelope, ok, okList, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import {
  ConnectionParams,
  ConnectionSchema,
  CreateConnectionBody,
  connectionListQuery,
} from './connection.schemas.ts';
import * as service from './connection.service.ts';

/** Friend requests: request, confirm, delete, list. */
export default async function connectionRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const caller = (request: FastifyRequest) => request.auth?.userUuid as string;

  app.post<{ Body: { user_uuid: string } }>(
    '/connections',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['connections'],
        summary: 'Send a friend request',
        body: CreateConnectionBody,
        response: { 201: DataEnvelope(ConnectionSchema) },
      },
    },
    async (request, reply) => {
      const connection = await service.requestConnection(ctx, caller(request), request.body.user_uuid);
      return reply.status(201).send(ok(connection));
    },
  );

  app.post<{ Params: { uuid: string } }>(
    '/connections/:uuid/confirm',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['connections'],
        summary: 'Confirm a friend request (its addressee only)',
        params: ConnectionParams,
        response: { 200: DataEnvelope(ConnectionSchema) },
      },
    },
    async (request) => ok(await service.confirmConnection(ctx, caller(request), request.params.uuid)),
  );

  app.post<{ Params: { uuid: string } }>(
    '/connections/:uuid/delete',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['connections'],
        summary: 'Delete a connection or withdraw a request (either side)',
        params: ConnectionParams,
        response: { 200: StatusEnvelope },
      },
    },
    async (request) => {
      await service.deleteConnection(ctx, caller(request), request.params.uuid);
      return okStatus();
    },
  );

  app.get<{ Querystring: Record<string, unknown> }>(
    '/connections',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['connections'],
        summary: "List the caller's connections",
        querystring: connectionListQuery(ctx.config.PAGE_LIMIT_MAX),
        response: { 200: ListEnvelope(Type.Array(ConnectionSchema)) },
      },
    },
    async (request) => {
      const { data, count } = await service.listConnections(ctx, caller(request), request.query);
      return okList(data, count);
    },
  );
}
