import { schemas } from '../generated/index.js';
import type { Route } from './types.js';

const ERROR_TEXT: Record<number, string> = {
  400: 'Bad request', 401: 'Unauthenticated', 403: 'Forbidden', 404: 'Not found', 405: 'Method not allowed',
  409: 'Conflict', 413: 'Body too large', 422: 'Validation error', 429: 'Rate limited', 503: 'Unavailable',
};

/** Builds the OpenAPI 3.1 document from the route table and the same schemas that validate requests. */
export function buildOpenApi(routes: Route[], issuer: string, version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const used = new Set<string>(['common.error']);
  const ref = (id: string) => { used.add(id); return { $ref: `#/components/schemas/${id}` }; };
  for (const r of routes) {
    if (!r.doc) continue;
    const oaPath = r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const op: Record<string, unknown> = { summary: r.doc.summary, operationId: `${r.method.toLowerCase()}${oaPath.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}` };
    if (r.doc.tags) op.tags = r.doc.tags;
    if (r.doc.permission) { op['x-permission'] = r.doc.permission; op.description = `Requires permission \`${r.doc.permission}\`.`; }
    const params: unknown[] = [];
    for (const m of r.path.matchAll(/:([A-Za-z0-9_]+)/g)) params.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
    if (r.querySchema) {
      const qs = schemas[r.querySchema];
      for (const [name, s] of Object.entries<Record<string, unknown>>(qs?.properties ?? {})) {
        params.push({ name, in: 'query', required: (qs.required ?? []).includes(name), schema: s });
      }
    }
    if (params.length) op.parameters = params;
    if (r.bodySchema) {
      const type = r.body === 'form' ? 'application/x-www-form-urlencoded' : 'application/json';
      op.requestBody = { required: true, content: { [type]: { schema: ref(r.bodySchema) } } };
    }
    const responses: Record<string, unknown> = {};
    // A route that serves pages answers browsers in HTML, success and error alike (negotiate.ts).
    const page = r.html ? { 'text/html': { schema: { type: 'string' } } } : {};
    for (const [status, id] of Object.entries(r.doc.responses ?? { 200: null })) {
      const content = { ...(id ? { 'application/json': { schema: ref(id) } } : {}), ...(Number(status) < 300 ? page : {}) };
      responses[status] = Object.keys(content).length ? { description: 'Success', content } : { description: 'Success' };
    }
    const errs = new Set<number>(r.doc.errors ?? []);
    if (r.bodySchema || r.querySchema) errs.add(r.iface === 'admin' ? 422 : 400);
    if (r.doc.security && r.doc.security !== 'none') errs.add(401);
    if (r.doc.permission) errs.add(403);
    for (const s of [...errs].sort()) responses[String(s)] = { description: ERROR_TEXT[s] ?? 'Error', content: { 'application/json': { schema: ref('common.error') }, ...page } };
    op.responses = responses;
    const sec = r.doc.security;
    if (sec === 'basic') op.security = [{ clientBasic: [] }];
    else if (sec === 'bearer') op.security = [{ bearer: [] }];
    else if (sec === 'session') op.security = [{ session: [] }];
    else if (sec === 'apikey') op.security = [{ apiKey: [] }];
    else op.security = [];
    (paths[oaPath] ??= {})[r.method.toLowerCase()] = op;
  }
  // Pull in schemas referenced from used schemas.
  const queue = [...used];
  while (queue.length) {
    const id = queue.pop()!;
    JSON.stringify(schemas[id] ?? {}, (k, v) => {
      if (k === '$ref' && typeof v === 'string' && !v.includes('#') && !used.has(v)) { used.add(v); queue.push(v); }
      return v;
    });
  }
  const components: Record<string, unknown> = {};
  for (const id of [...used].sort()) {
    const s = schemas[id];
    if (!s) continue;
    components[id] = JSON.parse(JSON.stringify(inlineDefs(s), (k, v) => (k === '$ref' && typeof v === 'string' && !v.startsWith('#') ? `#/components/schemas/${v}` : v)));
  }
  return {
    openapi: '3.1.0',
    info: { title: 'svc identity and access service', version },
    servers: [{ url: issuer }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        clientBasic: { type: 'http', scheme: 'basic', description: 'OAuth client id and secret' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        session: { type: 'apiKey', in: 'cookie', name: 'svc_session' },
        apiKey: { type: 'http', scheme: 'bearer', description: 'Check API key' },
      },
    },
  };
}

/**
 * A field defined in a shared schema's $defs (`common.client-metadata#/$defs/name`) is written out where
 * it is used, so the document's references all name whole components.
 */
function inlineDefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(inlineDefs);
  if (!node || typeof node !== 'object') return node;
  const o = node as Record<string, unknown>;
  if (typeof o.$ref === 'string' && o.$ref.includes('#/$defs/')) {
    const { $ref, ...siblings } = o;
    const [id, name] = ($ref as string).split('#/$defs/');
    return inlineDefs({ ...(schemas[id!]?.$defs?.[name!] ?? {}), ...siblings });
  }
  return Object.fromEntries(Object.entries(o).filter(([k]) => k !== '$defs').map(([k, v]) => [k, inlineDefs(v)]));
}
