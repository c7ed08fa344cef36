import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Context } from '../context.ts';
import authRoutes from './auth/auth.routes.ts';
import { startAuth } from './auth/bootstrap.ts';
import commentRoutes from './comment/comment.routes.ts';
import { subscribeComments } from './comment/comment.service.ts';
import connectionRoutes from './connection/connection.routes.ts';
import { subscribeConnections } from './connection/connection.service.ts';
import healthRoutes from './health/health.routes.ts';
import karmaRoutes from './karma/karma.routes.ts';
import { subscribeKarma } from './karma/karma.subscriber.ts';
import mediaRoutes from './media/media.routes.ts';
import { checkMediaDir, subscribeMedia } from './media/media.service.ts';
import messageRoutes from './message/message.routes.ts';
import { subscribeMessages } from './message/message.service.ts';
import networkRoutes from './network/network.routes.ts';
import { subscribeNetworks } from './network/network.service.ts';
import postRoutes from './post/post.routes.ts';
import { subscribePosts } from './post/post.service.ts';
import searchRoutes from './search/search.routes.ts';
import tagRoutes from './tag/tag.routes.ts';
import { ensureEmotionTags } from './tag/tag.service.ts';
import tagAssociationRoutes from './tag-association/tag-association.routes.ts';
import { subscribeTags } from './tag-association/tag-association.subscriber.ts';
import userRoutes from './user/user.routes.ts';

/** How the process running a module's start came to be. */
export interface ModuleStart {
  /** A worker forked in place of one that exited, after the server's start. */
  replacement: boolean;
}

/** A feature module: its routes plugin and the bus subscribers it installs. */
export interface Module {
  name: string;
  routes?: (app: FastifyInstance, opts: { ctx: Context }) => Promise<void>;
  subscribe?: (ctx: Context) => void;
  /** Runs once when the app is built, after migrations (e.g. bootstrap clients). */
  start?: (ctx: Context, log: FastifyBaseLogger, start: ModuleStart) => Promise<void>;
}

/** Every feature module, in registration order. Each module adds one line here. */
export const modules: Module[] = [
  // auth first: its API-wide rate limit covers only the routes registered after it.
  { name: 'auth', routes: authRoutes, start: startAuth },
  { name: 'health', routes: healthRoutes },
  { name: 'user', routes: userRoutes },
  { name: 'connection', routes: connectionRoutes, subscribe: subscribeConnections },
  { name: 'network', routes: networkRoutes, subscribe: subscribeNetworks },
  { name: 'post', routes: postRoutes, subscribe: subscribePosts },
  { name: 'comment', routes: commentRoutes, subscribe: subscribeComments },
  { name: 'media', routes: mediaRoutes, subscribe: subscribeMedia, start: checkMediaDir },
  { name: 'message', routes: messageRoutes, subscribe: subscribeMessages },
  // karma before tag-association: on userDeleted it takes back the user's reactions while they still exist.
  { name: 'karma', routes: karmaRoutes, subscribe: subscribeKarma },
  { name: 'tag', routes: tagRoutes, start: ensureEmotionTags },
  { name: 'tag-association', routes: tagAssociationRoutes, subscribe: subscribeTags },
  { name: 'search', routes: searchRoutes },
];
