// The floor: a bare Fastify server answering a constant JSON of the same size as the tag read it is compared with,
// with no token check and no database, so every scenario can be read as a ratio of what the framework alone can do
// on this machine. The harness passes the tag read's own answer (FLOOR_BODY); alone, it answers a small tag.
// With `--size-floors` the harness also passes each read scenario's answer (FLOOR_BODIES_FILE, a JSON array of
// strings), served at /floor/N as bytes encoded once: the least a server can do to send an answer of that size.
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const port = Number(process.argv[2] ?? 3901);
const small = {
  status: 'OK',
  data: {
    uuid: '019a0000-0000-7000-8000-000000000000',
    type: 'tag',
    name: 'javascript',
    tag_type: 'hashtag',
    associations: Array.from({ length: 5 }, (_, i) => `019a0000-0000-7000-8000-00000000000${i}`),
    associations_count: 5,
    created_at: '2026-11-22T00:00:00.000Z',
    updated_at: '2026-11-22T00:00:00.000Z',
  },
  timestamp: 1795300000,
};
const body: unknown = process.env.FLOOR_BODY ? JSON.parse(process.env.FLOOR_BODY) : small;
const sized: Buffer[] = process.env.FLOOR_BODIES_FILE
  ? (JSON.parse(readFileSync(process.env.FLOOR_BODIES_FILE, 'utf8')) as string[]).map((b) => Buffer.from(b))
  : [];
const app = Fastify({ logger: false });
app.get('/floor', async () => body);
sized.forEach((bytes, i) => {
  app.get(`/floor/${i}`, (_request, reply) => {
    reply.type('application/json; charset=utf-8').send(bytes);
  });
});
await app.listen({ host: '127.0.0.1', port });
console.log(`floor listening on ${port}`);
