import { Ajv, type ValidateFunction } from 'ajv';
import formatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its plugin is the module itself under Node and `.default` under the type checker.
const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (
  ajv: Ajv,
) => Ajv;

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI documents are walked freely.
type Json = any;

/** One parameter of an operation, as the OpenAPI document states it. */
export interface Param {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Json;
  description: string;
}

/** One operation of the OpenAPI document. */
export interface Operation {
  method: string;
  path: string;
  params: Param[];
  /** Request body schemas by content type. */
  body: Record<string, Json>;
  bodyRequired: boolean;
  responses: Record<string, Json>;
  /** Properties accepted by sortby/filterby (read from the parameter descriptions). */
  sortable: string[];
  filterable: string[];
}

/** Properties listed at the end of a sortby/filterby description ("properties: a, b, c."). */
function listedProperties(description: string | undefined): string[] {
  const m = /properties: ([a-z0-9_, ]+)\.?\s*$/i.exec(description ?? '');
  return m?.[1] ? m[1].split(',').map((s) => s.trim()) : [];
}

/** Every operation of the document. */
export function operationsOf(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const params = (op.parameters ?? []) as Param[];
      const body: Record<string, Json> = {};
      for (const [type, c] of Object.entries<Json>(op.requestBody?.content ?? {})) body[type] = c.schema;
      out.push({
        method: method.toUpperCase(),
        path,
        params,
        body,
        bodyRequired: Boolean(op.requestBody?.required),
        responses: op.responses ?? {},
        sortable: listedProperties(params.find((p) => p.name === 'sortby')?.description),
        filterable: listedProperties(params.find((p) => p.name === 'filterby')?.description),
      });
    }
  }
  return out;
}

function rewriteRefs(node: Json, prefix: string): Json {
  if (Array.isArray(node)) return node.map((n) => rewriteRefs(n, prefix));
  if (node && typeof node === 'object') {
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] =
        k === '$ref' && typeof v === 'string' && v.startsWith('#/')
          ? `${prefix}${v}`
          : rewriteRefs(v, prefix);
    }
    return out;
  }
  return node;
}

/** Validates answers against the document's response schemas; the components are compiled once. */
export class ResponseValidator {
  private readonly ajv: Ajv;
  private readonly cache = new Map<string, ValidateFunction | null>();

  constructor(doc: Json) {
    this.ajv = new Ajv({ strict: false, allErrors: false, validateFormats: true });
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: 'openapi', components: doc.components ?? {} });
  }

  /** The response entry for a status: exact, then 4XX/5XX, then default. */
  responseFor(op: Operation, status: number): Json | undefined {
    const r = op.responses;
    return r[String(status)] ?? r[`${String(status)[0]}XX`] ?? r[`${String(status)[0]}xx`] ?? r.default;
  }

  /** Returns undefined when the answer fits the document, otherwise what is wrong. */
  check(op: Operation, status: number, contentType: string | undefined, text: string): string | undefined {
    const entry = this.responseFor(op, status);
    if (!entry) return `status ${status} is not documented for ${op.method} ${op.path}`;
    const json = entry.content?.['application/json'];
    if (!json) return undefined; // e.g. media bytes: nothing to validate as JSON
    if (!(contentType ?? '').startsWith('application/json')) {
      return `content-type ${contentType} where the document says application/json`;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return 'body is not JSON';
    }
    const key = `${op.method} ${op.path} ${status}`;
    let validate: ValidateFunction | null | undefined = this.cache.get(key);
    if (validate === undefined) {
      validate = json.schema ? this.ajv.compile(rewriteRefs(json.schema, 'openapi')) : null;
      this.cache.set(key, validate);
    }
    if (validate?.(value) === false) {
      return `body does not match the response schema: ${this.ajv.errorsText(validate.errors)}`;
    }
    return undefined;
  }
}
