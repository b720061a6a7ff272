import type { AppError, Interface, ValidationError } from '../errors.js';
import type { HttpRequest } from './request.js';

/** What a handler returns; an object body is sent as JSON. */
export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  /** Set-Cookie values, one per cookie. */
  cookies?: string[];
  body?: unknown;
  /** Content-Type for string and Buffer bodies. */
  type?: string;
}

export type Handler = (req: HttpRequest) => Reply | Promise<Reply>;

export interface RouteDoc {
  summary: string;
  tags?: string[];
  /** Permission an admin caller needs, documented in OpenAPI (x-permission). */
  permission?: string;
  /** Response schema ids by status code. */
  responses?: Record<string, string | null>;
  /** Extra error statuses this operation may answer. */
  errors?: number[];
  security?: 'basic' | 'bearer' | 'session' | 'apikey' | 'none';
}

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path with ':name' parameters. */
  path: string;
  /** Which error dialect the route speaks. */
  iface: Interface;
  /** How to read the body: JSON object, urlencoded form, or none at all. */
  body?: 'json' | 'form' | 'none';
  /** Validator ids from schemas/ for the parsed body and the query string. */
  bodySchema?: string;
  querySchema?: string;
  /** Largest body accepted, defaults to the configured limit. */
  bodyLimit?: number;
  /**
   * The route serves pages: its errors are the error page for a browser and JSON for an API client
   * (negotiate.ts decides by the request). Routes without it always answer errors in JSON.
   */
  html?: boolean;
  /**
   * Runs before the body and query are parsed and validated: credentials are checked first, so an
   * unauthenticated caller gets 401, not a verdict on its body.
   */
  authenticate?: (req: HttpRequest) => Promise<void>;
  /**
   * The error a schema violation of the body becomes, when the route's protocol names its own codes
   * (RFC 7591 3.2.2: invalid_redirect_uri, invalid_client_metadata); by default the interface's.
   */
  bodyError?: (err: ValidationError) => AppError;
  handler: Handler;
  doc?: RouteDoc;
}
