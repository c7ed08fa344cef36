import { type Static, Type } from 'typebox';
import { shownTextSchema, UuidSchema, uuidSchema } from '../../http/schemas.ts';
import { visibilitySchema } from '../post/post.schemas.ts';
import { languageSchema } from '../user/languages.ts';

/** A media record as the API returns it (the bytes are at GET /media/{uuid}/file). */
export const MediaSchema = Type.Object(
  {
    uuid: UuidSchema,
    type: Type.Literal('media'),
    user_uuid: uuidSchema('The uploader.'),
    title: Type.Union([Type.String(), Type.Null()]),
    description: Type.Union([Type.String(), Type.Null()]),
    content_type: Type.String({ description: 'Detected from the bytes, not taken from the client.' }),
    size: Type.Integer({ minimum: 0, description: 'Size in bytes.' }),
    visibility: visibilitySchema,
    language: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

/** Media as a TypeScript value. */
export type Media = Static<typeof MediaSchema>;

/** Path parameters of the media operations. */
export const MediaParams = Type.Object(
  { uuid: uuidSchema('uuid of the media record') },
  { additionalProperties: false },
);

/** Form fields of POST /media (multipart/form-data); `file` carries the bytes. */
export const UploadMediaBody = Type.Object(
  {
    file: Type.String({
      contentMediaType: 'application/octet-stream',
      description: 'The file (binary). Images, video, audio and PDF are accepted.',
    }),
    title: Type.Optional(
      shownTextSchema(
        200,
        'Title, up to 200 characters; no control characters, direction overrides or zero-width spaces.',
      ),
    ),
    description: Type.Optional(
      Type.String({ maxLength: 2000, description: 'Description, up to 2000 characters.' }),
    ),
    visibility: Type.Optional(visibilitySchema),
    language: Type.Optional(languageSchema),
  },
  { additionalProperties: false },
);

/** Text fields of an upload, after validation. */
export type UploadMediaInput = Omit<Static<typeof UploadMediaBody>, 'file'>;

/** Response schema of the download: the raw bytes (never serialized as JSON). */
export const MediaFileResponse = {
  description: 'The stored bytes, with the stored content type (an image, video, audio or PDF type).',
  content: {
    'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
    'image/*': { schema: { type: 'string', format: 'binary' } },
    'video/*': { schema: { type: 'string', format: 'binary' } },
    'audio/*': { schema: { type: 'string', format: 'binary' } },
    'application/pdf': { schema: { type: 'string', format: 'binary' } },
  },
};
