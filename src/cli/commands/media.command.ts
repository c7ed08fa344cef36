import { sweepMediaFiles } from '../../modules/media/media-sweep.service.ts';
import { type Command, flagValue } from '../command.ts';

/** Minutes a file must have gone unwritten before `media sweep` removes it, by default. */
const DEFAULT_OLDER_THAN_MINUTES = 60;

/** `media sweep`: removes the files in MEDIA_DIR without a media record, and uploads cut off by a crash. */
export const mediaCommand: Command = {
  name: 'media',
  usage:
    'media sweep [--older-than MINUTES]   remove files in MEDIA_DIR no media record names, and cut-off uploads, unwritten for MINUTES (60)',
  async run(ctx, args) {
    const given = flagValue(args, '--older-than');
    const minutes = given === undefined ? DEFAULT_OLDER_THAN_MINUTES : Number(given);
    if (args[0] !== 'sweep' || !Number.isInteger(minutes) || minutes < 1 || minutes > 525_600) {
      console.error('usage: npm run cli -- media sweep [--older-than MINUTES] (a whole number, 1-525600)');
      return 2;
    }
    const { files, uploads, bytes } = await sweepMediaFiles(ctx, minutes * 60_000);
    console.log(
      `media swept: ${files} files without a record, ${uploads} cut-off uploads, ${bytes} bytes, each unwritten for over ${minutes} minutes`,
    );
    return 0;
  },
};
