import type { FastifyInstance } from 'fastify';
import type { Context } from '../../context.ts';
import { DataEnvelope, ok, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import type { AuthContext } from '../auth/auth.service.ts';
import {
  MeSchema,
  RegisterBody,
  type RegisterInput,
  UpdateBody,
  type UpdateInput,
  UserParams,
  UserSchema,
} from './user.schemas.ts';
import * as service from './user.service.ts';

/** Users: register, read, the caller's own account, update and delete (Owner). */
export default async function userRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const owner = async (request: { params: unknown }) =>
    service.userOwner(ctx, (request.params as { uuid: string }).uuid);

  app.post(
    '/users',
    {
      config: { access: 'public' },
      schema: {
        tags: ['users'],
        summary: 'Register a user (any token, a guest token included)',
        body: RegisterBody,
        response: { 201: DataEnvelope(UserSchema) },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return ok(await service.registerUser(ctx, request.body as RegisterInput));
    },
  );

  app.get(
    '/users/:uuid',
    {
      config: { access: 'public' },
      schema: {
        tags: ['users'],
        summary: 'One user (never the email)',
        params: UserParams,
        response: { 200: DataEnvelope(UserSchema) },
      },
    },
    async (request) => ok(await service.getUser(ctx, (request.params as { uuid: string }).uuid)),
  );

  app.get(
    '/me',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['users'],
        summary: 'The logged-in user, with email and role',
        response: { 200: DataEnvelope(MeSchema) },
      },
    },
    async (request) => ok(await service.getMe(ctx, (request.auth as AuthContext).userUuid as string)),
  );

  app.post(
    '/users/:uuid/update',
    {
      config: { access: 'owner', owner, ownerKind: 'user' },
      schema: {
        tags: ['users'],
        summary: 'Update your profile or password (a new password ends your other sessions)',
        params: UserParams,
        body: UpdateBody,
        response: { 200: DataEnvelope(UserSchema) },
      },
    },
    async (request) => {
      const auth = request.auth as AuthContext;
      const { uuid } = request.params as { uuid: string };
      return ok(await service.updateUser(ctx, uuid, request.body as UpdateInput, auth.tokenHash));
    },
  );

  app.post(
    '/users/:uuid/delete',
    {
      config: { access: 'owner', owner, ownerKind: 'user' },
      schema: {
        tags: ['users'],
        summary: 'Delete your account, its content and every token',
        params: UserParams,
        response: { 200: StatusEnvelope },
      },
    },
    async (request) => {
      await service.deleteUser(ctx, (request.params as { uuid: string }).uuid);
      return okStatus();
    },
  );
}
