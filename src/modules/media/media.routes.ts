import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import type { Context } from '../../context.ts';
import { DataEnvelope, ok, okStatus, StatusEnvelope } from '../../http/envelope.ts';
import { ApiError, invalidField } from '../../http/errors.ts';
import {
  MediaFileResponse,
  MediaParams,
  MediaSchema,
  UploadMediaBody,
  type UploadMediaInput,
} from './media.schemas.ts';
import * as service from './media.service.ts';

type WithUuid = { Params: { uuid: string } };

/** Errors of the multipart parser (busboy) turned into the service's own codes, so they get the envelope. */
function multipartError(error: FastifyError): Error {
  switch (error.code) {
    case 'FST_FILES_LIMIT':
      return invalidField('file', 'send exactly one file, in the field named file');
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new ApiError(
        'invalid_request',
        'The form has too many fields; send file plus title, description, visibility and language.',
      );
    case 'FST_PROTO_VIOLATION':
      return new ApiError('invalid_request', 'A form field name is not allowed.');
    case 'FST_INVALID_JSON_FIELD_ERROR':
      // The parser reads a part labelled application/json as JSON; form fields are plain text anyway.
      return new ApiError(
        'invalid_request',
        'A form field is labelled application/json but is not valid JSON; send form fields as plain text.',
      );
  }
  if (
    !(error instanceof ApiError) &&
    /Unexpected end of (form|file)|Malformed|Boundary not found|terminated early|Unexpected end of multipart/i.test(
      error.message,
    )
  ) {
    return new ApiError(
      'invalid_request',
      'The multipart/form-data body could not be read; send a well-formed form with a file field.',
    );
  }
  return error;
}

/** The answer to an upload that is not multipart/form-data with a file part named file. */
function notMultipart(): ApiError {
  return new ApiError(
    'unsupported_media_type',
    'Upload media as multipart/form-data with the file in a field named file.',
  );
}

/** Media: multipart upload streamed to MEDIA_DIR, read, download, delete. */
export default async function mediaRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const viewer = (request: FastifyRequest) => request.auth?.userUuid ?? null;
  const owner = async (request: FastifyRequest, c: Context) =>
    service.mediaOwner(c, (request.params as { uuid: string }).uuid);
  // The file received for a request; it never becomes part of the validated body.
  const uploads = new WeakMap<FastifyRequest, service.ReceivedUpload>();

  const parentHandler = app.errorHandler;
  app.setErrorHandler(function (error: FastifyError, request, reply) {
    return parentHandler.call(this, multipartError(error) as FastifyError, request, reply);
  });

  await app.register(multipart, {
    // Text fields become the body (validated by the schema); the file is streamed to disk by onFile.
    attachFieldsToBody: 'keyValues',
    limits: {
      fileSize: ctx.config.MEDIA_MAX_BYTES,
      files: 1,
      fields: 10,
      parts: 12,
      fieldSize: 16 * 1024,
      fieldNameSize: 100,
      headerPairs: 50,
    },
    async onFile(this: FastifyRequest, part: MultipartFile) {
      if (this.routeOptions.url !== '/media') {
        part.file.resume();
        throw new ApiError('unsupported_media_type', 'This operation takes no file; send JSON or no body.');
      }
      if (part.fieldname !== 'file') {
        part.file.resume();
        throw invalidField(
          part.fieldname.slice(0, 60),
          'is not a file field; send the file in the field named file',
        );
      }
      // The route's access makes this a signed-in user; the quota read before the file is theirs.
      const userUuid = this.auth?.userUuid;
      if (!userUuid) {
        part.file.resume();
        throw new ApiError('login_required', 'Uploading media needs a logged-in user.');
      }
      uploads.set(this, await service.receiveUpload(ctx, userUuid, part.file));
      // keyValues puts `value` into the body, so the schema sees that the file field was sent.
      (part as unknown as { value: string }).value = part.filename || 'file';
    },
  });

  // Whatever answer a request gets, a received file that was not recorded is removed before the answer leaves.
  app.addHook('onSend', async (request, _reply, payload) => {
    const upload = uploads.get(request);
    if (upload) await service.discardUpload(upload);
    return payload;
  });

  app.post<{ Body: UploadMediaInput & { file: string } }>(
    '/media',
    {
      config: { access: 'logged' },
      // Before validation: a JSON or form body is the wrong kind of request whatever its fields, not a missing file.
      preValidation: async (request) => {
        if (!request.isMultipart()) throw notMultipart();
        // A part labelled application/json arrives parsed (null, 123, ["friends"]), which the validator would coerce
        // into text (null stored as ""): form fields are text, so anything else is refused.
        for (const [field, value] of Object.entries((request.body ?? {}) as Record<string, unknown>)) {
          if (typeof value !== 'string') throw invalidField(field.slice(0, 60), 'must be plain text');
          // The form parser decodes bytes that are not UTF-8 into U+FFFD, where a JSON or form body is refused.
          if (value.includes('\uFFFD')) {
            throw invalidField(
              field.slice(0, 60),
              'is not valid UTF-8 text (or holds U+FFFD, the replacement character); send the text as UTF-8',
            );
          }
        }
      },
      schema: {
        tags: ['media'],
        summary: 'Upload a file (multipart/form-data: file, title?, description?, visibility?, language?)',
        consumes: ['multipart/form-data'],
        body: UploadMediaBody,
        response: { 201: DataEnvelope(MediaSchema) },
      },
    },
    async (request, reply) => {
      const upload = uploads.get(request);
      // A multipart form whose file field is text (`curl -F file=photo.png`, without the @): the form is malformed.
      if (!upload)
        throw invalidField('file', 'must be a file part (with a filename); it arrived as a text field');
      const { file: _file, ...input } = request.body;
      const media = await service.createMedia(ctx, request.auth?.userUuid as string, upload, input);
      return reply.status(201).send(ok(media));
    },
  );

  app.get<WithUuid>(
    '/media/:uuid',
    {
      config: { access: 'public' },
      schema: {
        tags: ['media'],
        summary: 'Read a media record the caller may see',
        params: MediaParams,
        response: { 200: DataEnvelope(MediaSchema) },
      },
    },
    async (request) => ok(await service.getMedia(ctx, request.params.uuid, viewer(request))),
  );

  app.get<WithUuid>(
    '/media/:uuid/file',
    {
      config: { access: 'public' },
      schema: {
        tags: ['media'],
        summary: 'Download the bytes of a media record the caller may see',
        params: MediaParams,
        response: { 200: MediaFileResponse },
      },
    },
    async (request, reply) => {
      const file = await service.openMediaFile(ctx, request.params.uuid, viewer(request));
      return reply
        .type(file.contentType)
        .header('content-length', file.size)
        .header('content-disposition', `attachment; filename="${file.fileName}"`)
        .header('x-content-type-options', 'nosniff')
        .send(file.stream);
    },
  );

  app.post<WithUuid>(
    '/media/:uuid/delete',
    {
      config: { access: 'owner', owner, ownerKind: 'media' },
      schema: {
        tags: ['media'],
        summary: 'Delete a media record and its file (its uploader only)',
        params: MediaParams,
        response: { 200: StatusEnvelope },
      },
    },
    async (request) => {
      await service.deleteMedia(ctx, request.params.uuid);
      return okStatus();
    },
  );
}
