import type { FastifyInstance } from 'fastify';
import type { Context } from '../../context.ts';
import { DataEnvelope, ok, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import { ContentParams, ReactBody, ReactionParams, TagAssociationSchema } from './tag-association.schemas.ts';
import { type ReactionKind, react, unreact } from './tag-association.service.ts';

/** Reactions: a configured emotion attached to a post or comment by a logged-in user. */
export default async function emotionRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  for (const [kind, prefix] of [
    ['post', '/posts'],
    ['comment', '/comments'],
  ] as [ReactionKind, string][]) {
    app.post(
      `${prefix}/:uuid/emotions`,
      {
        config: { access: 'logged' },
        schema: {
          tags: ['emotions'],
          summary: `React to a ${kind} with an emotion (201; 200 with the existing reaction when repeated)`,
          params: ContentParams,
          body: ReactBody,
          response: { 200: DataEnvelope(TagAssociationSchema), 201: DataEnvelope(TagAssociationSchema) },
        },
      },
      async (request, reply) => {
        const { uuid } = request.params as { uuid: string };
        const { name } = request.body as { name: string };
        const { association, created } = await react(ctx, request.auth?.userUuid as string, kind, uuid, name);
        reply.status(created ? 201 : 200);
        return ok(association);
      },
    );
    app.post(
      `${prefix}/:uuid/emotions/:name/delete`,
      {
        config: { access: 'logged' },
        schema: {
          tags: ['emotions'],
          summary: `Take back your reaction to a ${kind}`,
          params: ReactionParams,
          response: { 200: StatusEnvelope },
        },
      },
      async (request) => {
        const { uuid, name } = request.params as { uuid: string; name: string };
        await unreact(ctx, request.auth?.userUuid as string, kind, uuid, name);
        return okStatus();
      },
    );
  }
}
