/**
 * Typed errors and the single mapping from any thrown value to the spec's error body.
 * Only AppError subclasses are exposed to clients; everything else becomes 500 internal_error.
 */

export type Details = Record<string, string[]>;

export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Details | undefined;
  readonly retryAfter: number | undefined;
  readonly headers: Record<string, string> | undefined;
  constructor(status: number, code: string, description: string, opts: { details?: Details; retryAfter?: number; headers?: Record<string, string>; cause?: unknown } = {}) {
    // An AppError is an expected outcome answered to the client (a third of a token-exchange mix is
    // 400s): capturing a stack costs more than the answer and nobody reads it. A cause keeps its own.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(description, opts.cause === undefined ? undefined : { cause: opts.cause });
    Error.stackTraceLimit = limit;
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.details = opts.details;
    this.retryAfter = opts.retryAfter;
    this.headers = opts.headers;
  }
}

export class InvalidRequest extends AppError {
  constructor(description = 'The request is malformed.', details?: Details) { super(400, 'invalid_request', description, details ? { details } : {}); }
}
export class InvalidJson extends AppError {
  constructor() { super(400, 'invalid_json', 'The request body is not valid JSON.'); }
}
/** Schema violation: 422 validation_error on the admin interface, 400 invalid_request on OAuth endpoints. */
export class ValidationError extends AppError {
  constructor(details: Details, description = 'The request failed validation.') { super(422, 'validation_error', description, { details }); }
}
export class Unauthorized extends AppError {
  constructor(code: 'unauthorized' | 'token_expired' | 'token_revoked' = 'unauthorized', description = 'Authentication is required.') {
    super(401, code, description, { headers: { 'WWW-Authenticate': 'Bearer' } });
  }
}
export class Forbidden extends AppError {
  constructor(code: 'forbidden' | 'insufficient_scope' | 'user_suspended' | 'user_locked' | 'client_disabled' = 'forbidden', description = 'You are not allowed to do this.') {
    super(403, code, description);
  }
}
export class NotFound extends AppError {
  constructor(code = 'not_found', description = 'The resource does not exist.') { super(404, code, description); }
}
export class MethodNotAllowed extends AppError {
  constructor(allow: string[]) { super(405, 'invalid_request', 'The method is not allowed on this resource.', { headers: { Allow: allow.join(', ') } }); }
}
export class Conflict extends AppError {
  constructor(code = 'conflict', description = 'The request conflicts with the current state.') { super(409, code, description); }
}
export class PayloadTooLarge extends AppError {
  constructor(limit: number) { super(413, 'invalid_request', `The request body exceeds ${limit} bytes.`); }
}
export class RateLimited extends AppError {
  constructor(retryAfter: number, description = 'Too many requests.') {
    super(429, 'rate_limit_exceeded', description, { retryAfter, headers: { 'Retry-After': String(retryAfter) } });
  }
}
export class ServiceUnavailable extends AppError {
  constructor(description = 'The service is temporarily unavailable.', retryAfter = 1, cause?: unknown) {
    super(503, 'service_unavailable', description, { retryAfter, headers: { 'Retry-After': String(retryAfter) }, cause });
  }
}
/** Load shedding: the same answer as ServiceUnavailable, counted in svc_http_shed_total instead of logged one by one. */
export class Overloaded extends ServiceUnavailable {
  constructor(description = 'The server is at capacity; retry shortly.') { super(description, 1); }
}

/** RFC 6749 section 5.2 errors of the OAuth endpoints, carried inside the spec's error body. */
export class OAuthError extends AppError {
  constructor(code: 'invalid_request' | 'invalid_grant' | 'invalid_scope' | 'invalid_target' | 'unauthorized_client' | 'unsupported_grant_type' | 'unsupported_token_type' | 'invalid_client' | 'access_denied' | 'login_required' | 'invalid_dpop_proof',
    description: string, status = 400) {
    super(code === 'invalid_client' ? 401 : status, code, description,
      code === 'invalid_client' ? { headers: { 'WWW-Authenticate': 'Basic realm="svc", charset="UTF-8"' } } : {});
  }
}

export type Interface = 'oauth' | 'admin' | 'public';

export interface ErrorReply {
  status: number;
  headers: Record<string, string> | undefined;
  body: Record<string, unknown>;
  /** The error was not an AppError: a bug or an infrastructure failure that must be logged. */
  unexpected: boolean;
}

/** The one place errors become HTTP: status, headers and the spec's body for the given interface. */
export function toErrorReply(err: unknown, iface: Interface): ErrorReply {
  if (!(err instanceof AppError)) {
    return {
      status: 500, headers: undefined, unexpected: true,
      body: iface === 'admin'
        ? { error: 'internal_error', error_description: 'An unexpected error occurred.', message: 'An unexpected error occurred.' }
        : { error: 'internal_error', error_description: 'An unexpected error occurred.' },
    };
  }
  let status = err.status;
  let code = err.code;
  // RFC 6749 5.2: OAuth endpoints report malformed parameters as invalid_request (400).
  if (iface === 'oauth' && code === 'validation_error') { status = 400; code = 'invalid_request'; }
  const body: Record<string, unknown> = { error: code, error_description: err.message };
  if (iface === 'admin') body.message = err.message;
  if (err.details) body.details = err.details;
  if (err.retryAfter !== undefined) body.retry_after = err.retryAfter;
  return { status, headers: err.headers, body, unexpected: false };
}
