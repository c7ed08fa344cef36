import type { Kysely, Transaction } from 'kysely';
import type { ClientTable, TokenTable } from '../modules/auth/auth.table.ts';
import type { CommentTable } from '../modules/comment/comment.table.ts';
import type { ConnectionTable, FriendTable } from '../modules/connection/connection.table.ts';
import type { KarmaTable } from '../modules/karma/karma.table.ts';
import type { MediaTable } from '../modules/media/media.table.ts';
import type { MessageTable } from '../modules/message/message.table.ts';
import type { NetworkTable } from '../modules/network/network.table.ts';
import type { PostTable } from '../modules/post/post.table.ts';
import type { TagTable } from '../modules/tag/tag.table.ts';
import type { TagAssociationTable } from '../modules/tag-association/tag-association.table.ts';
import type { UserTable } from '../modules/user/user.table.ts';

/** Every table of the service. */
export interface Database {
  users: UserTable;
  clients: ClientTable;
  tokens: TokenTable;
  connections: ConnectionTable;
  friends: FriendTable;
  networks: NetworkTable;
  posts: PostTable;
  comments: CommentTable;
  media: MediaTable;
  messages: MessageTable;
  karma: KarmaTable;
  tags: TagTable;
  tag_associations: TagAssociationTable;
}

/** The query builder handed to repositories: the database or an open transaction. */
export type Db = Kysely<Database> | Transaction<Database>;

/** Which engine is behind a Db; some SQL (search, upserts) differs. */
export type Dialect = 'sqlite' | 'postgres';
