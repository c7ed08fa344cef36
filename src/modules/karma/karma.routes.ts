import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Context } from '../../context.ts';
import { asksNoCache } from '../../http/cache-control.ts';
import { DataEnvelope, ListEnvelope, ok, okList, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import { Karma, KarmaParams, KarmaUpdateBody, karmaListQuery } from './karma.schemas.ts';
import {
  deleteKarmaRecord,
  findKarma,
  getKarma,
  type Karma as KarmaRecord,
  type KarmaUpdate,
  karmaOwner,
  listKarma,
  updateKarmaRecord,
} from './karma.service.ts';

/** The Owner check reads the record's user_uuid. */
const owner = (request: FastifyRequest, ctx: Context) =>
  karmaOwner(ctx, (request.params as { karma_uuid: string }).karma_uuid);

// GET reads the whole record for its Owner check and answers with it: one read per request, not two (on PostgreSQL
// each is a round trip), none while the exact read cache holds it.
const readForGet = new WeakMap<FastifyRequest, KarmaRecord>();
const ownerOfWholeRecord = async (request: FastifyRequest, ctx: Context) => {
  const record = await findKarma(ctx, (request.params as { karma_uuid: string }).karma_uuid, {
    fresh: asksNoCache(request.headers['cache-control']),
    version: request.readVersion,
  });
  if (record) readForGet.set(request, record);
  return record?.user_uuid;
};

function caller(request: FastifyRequest): string {
  return request.auth?.userUuid as string;
}

/** GET /karma, GET /karma/{karma_uuid}, POST /karma/{karma_uuid}/update, POST /karma/{karma_uuid}/delete. */
export default async function karmaRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const ownerConfig = { access: 'owner' as const, owner, ownerKind: 'karma record' };

  app.get(
    '/karma',
    {
      config: { access: 'logged' },
      schema: {
        tags: ['karma'],
        summary: "The caller's own karma records, with paging, sortby and filterby",
        querystring: karmaListQuery(ctx.config.PAGE_LIMIT_MAX),
        response: { 200: ListEnvelope(Type.Array(Karma)) },
      },
    },
    async (request) => {
      const { data, count } = await listKarma(ctx, caller(request), request.query as Record<string, unknown>);
      return okList(data, count);
    },
  );

  app.get(
    '/karma/:karma_uuid',
    {
      config: { ...ownerConfig, owner: ownerOfWholeRecord },
      schema: {
        tags: ['karma'],
        summary: 'One karma record (Owner)',
        params: KarmaParams,
        response: { 200: DataEnvelope(Karma) },
      },
    },
    async (request) => {
      const { karma_uuid } = request.params as { karma_uuid: string };
      return ok(readForGet.get(request) ?? (await getKarma(ctx, caller(request), karma_uuid)));
    },
  );

  app.post(
    '/karma/:karma_uuid/update',
    {
      config: ownerConfig,
      schema: {
        tags: ['karma'],
        summary: "Corrects a karma record (Owner); points may not exceed the rule's points for the event",
        params: KarmaParams,
        body: KarmaUpdateBody,
        response: { 200: DataEnvelope(Karma) },
      },
    },
    async (request) => {
      const { karma_uuid } = request.params as { karma_uuid: string };
      return ok(await updateKarmaRecord(ctx, caller(request), karma_uuid, request.body as KarmaUpdate));
    },
  );

  app.post(
    '/karma/:karma_uuid/delete',
    {
      config: ownerConfig,
      schema: {
        tags: ['karma'],
        summary: 'Deletes a karma record (Owner) and takes its points out of the total',
        params: KarmaParams,
        response: { 200: StatusEnvelope },
      },
    },
    async (request) => {
      const { karma_uuid } = request.params as { karma_uuid: string };
      await deleteKarmaRecord(ctx, caller(request), karma_uuid);
      return okStatus();
    },
  );
}
