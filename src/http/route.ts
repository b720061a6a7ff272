import type { SchemaTypes } from '../generated/types.js';
import type { HttpRequest } from './request.js';
import type { Reply, Route } from './types.js';

export type SchemaId = keyof SchemaTypes;
/** The validated value of a schema, or nothing when the route declares none. */
export type Data<S> = S extends SchemaId ? SchemaTypes[S] : undefined;

/** What a route's handler receives: the request, and its body and query as their schemas type them. */
export interface Call<B, Q> {
  req: HttpRequest;
  params: Record<string, string>;
  body: B;
  query: Q;
}

export interface RouteSpec<B extends SchemaId | undefined, Q extends SchemaId | undefined> extends Omit<Route, 'bodySchema' | 'querySchema' | 'handler'> {
  bodySchema?: B;
  querySchema?: Q;
  handler: (call: Call<Data<B>, Data<Q>>) => Reply | Promise<Reply>;
}

/**
 * A route whose handler gets its body and query typed from the schemas that validated them (the
 * server validates before the handler runs), so no handler casts `req.data`. Admin routes have their
 * own declaration (adminRoute), which adds permission, tenant and audit.
 */
export function route<B extends SchemaId | undefined = undefined, Q extends SchemaId | undefined = undefined>(spec: RouteSpec<B, Q>): Route {
  const { handler, ...rest } = spec;
  return { ...rest, handler: (req) => handler({ req, params: req.params, body: req.data as Data<B>, query: req.queryData as Data<Q> }) };
}
