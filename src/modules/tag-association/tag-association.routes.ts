import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Context } from '../../context.ts';
import { asksNoCache } from '../../http/cache-control.ts';
import { clientGone } from '../../http/client-gone.ts';
import { isOperationEnabled } from '../../http/disabled.ts';
import { emptyBodyIsObject } from '../../http/empty-body.ts';
import { DataEnvelope, ListEnvelope, ok, okList, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import { ApiError } from '../../http/errors.ts';
import { renderAnswer, sendRendered } from '../../http/rendered.ts';
import emotionRoutes from './emotion.routes.ts';
import {
  AssociationParams,
  associationListQuery,
  CreateAssociationBody,
  TagAssociationSchema,
  UpdateAssociationBody,
  WriteAssociationBody,
} from './tag-association.schemas.ts';
import {
  ASSOCIATION_WHITELIST,
  type AssociationTargetType,
  associationOwner,
  checkAssociationWriteEnabled,
  createAssociation,
  deleteAssociation,
  getAssociation,
  listAssociations,
  resolveAssociationWrite,
  updateAssociation,
} from './tag-association.service.ts';

type UpdateInput = { tag_uuid?: string; target_uuid?: string; target_type?: AssociationTargetType };

function paramUuid(request: FastifyRequest): string {
  return (request.params as { tag_association_uuid: string }).tag_association_uuid;
}

function callerUuid(request: FastifyRequest): string {
  return request.auth?.userUuid as string;
}

/** The tag association operations: reads (public), the switchable writes, and the emotion reactions. */
export default async function tagAssociationRoutes(
  app: FastifyInstance,
  opts: { ctx: Context },
): Promise<void> {
  const { ctx } = opts;
  // Admins moderate any association; anyone else acts only on one whose target they may see.
  const seenBy = (request: FastifyRequest) =>
    request.auth?.role === 'admin' ? undefined : callerUuid(request);
  const owner = {
    access: 'owner' as const,
    owner: (request: FastifyRequest, c: Context) => associationOwner(c, paramUuid(request), seenBy(request)),
    ownerKind: 'tag association',
    adminOverride: true,
  };

  app.get(
    '/tag-associations/:tag_association_uuid',
    {
      config: { access: 'public' },
      schema: {
        tags: ['tag-associations'],
        summary: 'One tag association (its target must be visible to the caller)',
        params: AssociationParams,
        response: { 200: DataEnvelope(TagAssociationSchema) },
      },
    },
    async (request) => ok(await getAssociation(ctx, paramUuid(request), request.auth?.userUuid ?? null)),
  );

  app.get(
    '/tag-associations',
    {
      config: { access: 'public' },
      schema: {
        tags: ['tag-associations'],
        summary: 'List tag associations with paging, sortby, filterby, uuids and language',
        querystring: associationListQuery(ctx.config.PAGE_LIMIT_MAX, ASSOCIATION_WHITELIST),
        response: { 200: ListEnvelope(Type.Array(TagAssociationSchema)) },
      },
    },
    async (request, reply) => {
      const query = request.query as Record<string, unknown>;
      const answer = await listAssociations(ctx, query, request.auth?.userUuid ?? null, {
        fresh: asksNoCache(request.headers['cache-control']),
        version: request.readVersion,
        abandoned: clientGone(request),
        render: (page) => renderAnswer(reply, okList(page.data, page.count)),
      });
      return sendRendered(reply, answer);
    },
  );

  app.post(
    '/tag-association',
    {
      config: { access: 'logged', operation: 'tag-associations.create' },
      schema: {
        tags: ['tag-associations'],
        summary:
          'Associate a tag with a target (disabled unless ENABLED_OPERATIONS names tag-associations.create)',
        body: CreateAssociationBody,
        response: { 201: DataEnvelope(TagAssociationSchema) },
      },
    },
    async (request, reply) => {
      const body = request.body as {
        tag_uuid: string;
        target_uuid: string;
        target_type: AssociationTargetType;
      };
      reply.status(201);
      return ok(await createAssociation(ctx, callerUuid(request), body));
    },
  );

  // POST serves both delete and update; with both switched off it answers before any other check (token, body).
  await app.register(async (scope) => {
    scope.addHook('onRequest', async () => {
      const enabled = ctx.config.ENABLED_OPERATIONS;
      if (
        !isOperationEnabled(enabled, 'tag-associations.delete') &&
        !isOperationEnabled(enabled, 'tag-associations.update')
      ) {
        throw new ApiError(
          'operation_disabled',
          'The operations tag-associations.delete and tag-associations.update are disabled on this server. An operator can switch them on with ENABLED_OPERATIONS=tag-associations.delete,tag-associations.update.',
        );
      }
    });
    scope.post(
      '/tag-associations/:tag_association_uuid',
      {
        config: { ...owner, operations: ['tag-associations.delete', 'tag-associations.update'] },
        preValidation: emptyBodyIsObject,
        schema: {
          tags: ['tag-associations'],
          summary:
            'Delete or update a tag association: X-HTTP-Method-Override: DELETE|PATCH or _method=delete|update (creator or admin; disabled by default)',
          params: AssociationParams,
          headers: Type.Object({
            'x-http-method-override': Type.Optional(Type.String({ maxLength: 10 })),
          }),
          body: WriteAssociationBody,
          response: { 200: Type.Union([DataEnvelope(TagAssociationSchema), StatusEnvelope]) },
        },
      },
      async (request) => {
        const { _method, ...fields } = request.body as UpdateInput & { _method?: string };
        const write = resolveAssociationWrite(request.headers['x-http-method-override'], _method);
        checkAssociationWriteEnabled(ctx, write);
        if (write === 'delete') {
          if (Object.keys(fields).length > 0) {
            throw new ApiError(
              'invalid_request',
              `A delete takes no other fields; drop ${Object.keys(fields).join(', ')} or ask for an update.`,
              Object.keys(fields).map((field) => ({ field, message: 'is not accepted by a delete' })),
            );
          }
          await deleteAssociation(ctx, paramUuid(request), seenBy(request));
          return okStatus();
        }
        return ok(
          await updateAssociation(ctx, callerUuid(request), paramUuid(request), fields, seenBy(request)),
        );
      },
    );
  });

  app.delete(
    '/tag-associations/:tag_association_uuid',
    {
      config: { ...owner, operation: 'tag-associations.delete' },
      schema: {
        tags: ['tag-associations'],
        summary: 'Delete a tag association (creator or admin; disabled by default)',
        params: AssociationParams,
        response: { 200: StatusEnvelope },
      },
    },
    async (request) => {
      await deleteAssociation(ctx, paramUuid(request), seenBy(request));
      return okStatus();
    },
  );

  app.patch(
    '/tag-associations/:tag_association_uuid',
    {
      config: { ...owner, operation: 'tag-associations.update' },
      schema: {
        tags: ['tag-associations'],
        summary:
          'Update a tag association: any of tag_uuid, target_uuid, target_type (creator or admin; disabled by default)',
        params: AssociationParams,
        body: UpdateAssociationBody,
        response: { 200: DataEnvelope(TagAssociationSchema) },
      },
    },
    async (request) => {
      const body = request.body as UpdateInput;
      return ok(await updateAssociation(ctx, callerUuid(request), paramUuid(request), body, seenBy(request)));
    },
  );

  await app.register(emotionRoutes, { ctx });
}
