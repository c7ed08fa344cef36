import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Context } from '../../context.ts';
import { DataEnvelope, ok, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import { UserSchema } from '../user/user.schemas.ts';
import {
  CreateNetworkBody,
  type CreateNetworkInput,
  NetworkParams,
  NetworkSchema,
  UpdateNetworkBody,
  type UpdateNetworkInput,
} from './network.schemas.ts';
import * as service from './network.service.ts';

type WithUuid = { Params: { uuid: string } };

/** Networks: create, read, update, delete, join. */
export default async function networkRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const caller = (request: FastifyRequest) => request.auth?.userUuid as string;
  const owner = async (request: FastifyRequest, c: Context) =>
    service.networkOwner(c, (request.params as { uuid: string }).uuid);

  app.post<{ Body: CreateNetworkInput }>(
    '/networks',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['networks'],
        summary: 'Create a network',
        body: CreateNetworkBody,
        response: { 201: DataEnvelope(NetworkSchema) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(ok(await service.createNetwork(ctx, caller(request), request.body))),
  );

  app.get<WithUuid>(
    '/networks/:uuid',
    {
      config: { access: 'public' },
      schema: {
        tags: ['networks'],
        summary: 'Read a network',
        params: NetworkParams,
        response: { 200: DataEnvelope(NetworkSchema) },
      },
    },
    async (request) => ok(await service.getNetwork(ctx, request.params.uuid)),
  );

  app.post<WithUuid & { Body: UpdateNetworkInput }>(
    '/networks/:uuid/update',
    {
      config: { access: 'owner', owner, ownerKind: 'network' },
      schema: {
        tags: ['networks'],
        summary: 'Update a network (its creator only)',
        params: NetworkParams,
        body: UpdateNetworkBody,
        response: { 200: DataEnvelope(NetworkSchema) },
      },
    },
    async (request) => ok(await service.updateNetwork(ctx, request.params.uuid, request.body)),
  );

  app.post<WithUuid>(
    '/networks/:uuid/delete',
    {
      config: { access: 'owner', owner, ownerKind: 'network' },
      schema: {
        tags: ['networks'],
        summary: 'Delete a network (its creator only); members are left without a network',
        params: NetworkParams,
        response: { 200: StatusEnvelope },
      },
    },
    async (request) => {
      await service.deleteNetwork(ctx, caller(request), request.params.uuid);
      return okStatus();
    },
  );

  app.post<WithUuid>(
    '/networks/:uuid/join',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['networks'],
        summary: "Join a network: sets the caller's network_uuid",
        params: NetworkParams,
        response: { 200: DataEnvelope(UserSchema) },
      },
    },
    async (request) => ok(await service.joinNetwork(ctx, caller(request), request.params.uuid)),
  );
}
