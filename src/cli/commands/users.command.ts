import { setUserRole } from '../../modules/user/user.service.ts';
import type { Command } from '../command.ts';

/** `users role USERNAME admin|user`: set a user's role. */
export const usersCommand: Command = {
  name: 'users',
  usage: 'users role USERNAME admin|user     set the role of a user',
  async run(ctx, args) {
    const [sub, username, role] = args;
    if (sub !== 'role' || !username || (role !== 'admin' && role !== 'user')) {
      console.error('usage: users role USERNAME admin|user');
      return 2;
    }
    const user = await setUserRole(ctx, username, role);
    if (!user) {
      console.error(`no user named ${username}`);
      return 1;
    }
    console.log(`${user.username} (${user.uuid}) is now ${user.role}`);
    return 0;
  },
};
