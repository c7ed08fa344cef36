import { Ajv, type ValidateFunction } from 'ajv';
import formatsModule from 'ajv-formats';
import type { LightMyRequestResponse } from 'fastify';

// ajv-formats is CommonJS: its plugin is the module itself under Node and `.default` under the type checker.
const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (
  ajv: Ajv,
) => Ajv;

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI documents are walked freely.
type Json = any;

/**
 * A copy of a response schema with its component references inlined and every object closed
 * (`additionalProperties: false` where the document left it open), so an unlisted field fails validation.
 */
function closed(node: Json, components: Record<string, Json>, depth = 0): Json {
  if (depth > 50) throw new Error('schema nesting too deep (a recursive $ref?)');
  if (Array.isArray(node)) return node.map((n) => closed(n, components, depth + 1));
  if (!node || typeof node !== 'object') return node;
  if (typeof node.$ref === 'string') {
    const name = /^#\/components\/schemas\/(.+)$/.exec(node.$ref)?.[1];
    if (!name || !components[name]) throw new Error(`unresolvable $ref ${node.$ref}`);
    return closed(components[name], components, depth + 1);
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = closed(v, components, depth + 1);
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

/** Validates answers against the response schemas of the OpenAPI document. */
export class ResponseValidator {
  readonly #doc: Json;
  readonly #ajv = new Ajv({ strict: false, allErrors: true });
  readonly #cache = new Map<string, ValidateFunction | null>();

  constructor(doc: Json) {
    this.#doc = doc;
    addFormats(this.#ajv);
  }

  /** Problems of one answer (empty when it fits); undocumented operations and non-JSON bodies are skipped. */
  check(method: string, path: string, res: LightMyRequestResponse): string[] {
    const op = this.#doc.paths?.[path]?.[method.toLowerCase()];
    if (!op) return [];
    if (!/application\/json/.test(String(res.headers['content-type'] ?? ''))) return [];
    const status = String(res.statusCode);
    const responses = op.responses ?? {};
    const key = [status, `${status[0]}XX`, `${status[0]}xx`, 'default'].find((k) => responses[k]);
    if (!key) return [`status ${status} is not documented`];
    const cacheKey = `${method} ${path} ${key}`;
    let validate = this.#cache.get(cacheKey);
    if (validate === undefined) {
      const schema = responses[key]?.content?.['application/json']?.schema;
      validate = schema ? this.#ajv.compile(closed(schema, this.#doc.components?.schemas ?? {})) : null;
      this.#cache.set(cacheKey, validate);
    }
    if (!validate) return [`no JSON schema for ${status}`];
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      return ['body is not JSON'];
    }
    if (validate(body)) return [];
    return (validate.errors ?? []).map(
      (e) =>
        `${e.instancePath || '(root)'} ${e.message}${e.params?.additionalProperty ? ` (${e.params.additionalProperty})` : ''}`,
    );
  }
}
