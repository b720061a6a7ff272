/**
 * Typed errors, the one table of error codes they draw on, and the single mapping from any thrown
 * value to the spec's error body. Only AppError subclasses are exposed to clients; a dependency that
 * cannot be reached becomes 503 service_unavailable, everything else 500 internal_error.
 */

export type Details = Record<string, string[]>;

/** Where a code is defined: the interface spec's Errors part, or the OAuth/OpenID document it comes from. */
type Source = 'spec' | 'RFC 6749' | 'RFC 6750' | 'RFC 7591' | 'RFC 8628' | 'RFC 8707' | 'RFC 9101' | 'RFC 9126' | 'RFC 9449' | 'OpenID Connect Core';

interface CodeInfo { status: number; description: string; source: Source }

/**
 * Every error code the service answers, in an error body or an OAuth error redirect, with the status
 * it is answered with and the text used when the thrower gives none. A few classes answer a code
 * with another status (405 and 413 are invalid_request; an introspection refused to a client is 403
 * unauthorized_client). test/http/error-codes.test.ts holds this table to the spec's list.
 */
export const ERROR_CODES = {
  // The spec's table (interface-spec.md, Errors), in its order.
  invalid_request: { status: 400, description: 'The request is malformed.', source: 'spec' },
  invalid_json: { status: 400, description: 'The request body is not valid JSON.', source: 'spec' },
  flow_inactive: { status: 400, description: 'The flow is not active.', source: 'spec' },
  job_cancelled: { status: 400, description: 'The job was cancelled.', source: 'spec' },
  unauthorized: { status: 401, description: 'Authentication is required.', source: 'spec' },
  token_expired: { status: 401, description: 'The access token has expired.', source: 'spec' },
  token_revoked: { status: 401, description: 'The access token has been revoked.', source: 'spec' },
  forbidden: { status: 403, description: 'You are not allowed to do this.', source: 'spec' },
  insufficient_scope: { status: 403, description: 'The access token lacks a required scope.', source: 'spec' },
  user_suspended: { status: 403, description: 'The user is suspended.', source: 'spec' },
  user_locked: { status: 403, description: 'The user is locked.', source: 'spec' },
  client_disabled: { status: 403, description: 'The application is disabled.', source: 'spec' },
  not_found: { status: 404, description: 'The resource does not exist.', source: 'spec' },
  user_not_found: { status: 404, description: 'The user does not exist.', source: 'spec' },
  client_not_found: { status: 404, description: 'The application does not exist.', source: 'spec' },
  organization_not_found: { status: 404, description: 'The organization does not exist.', source: 'spec' },
  role_not_found: { status: 404, description: 'The role does not exist.', source: 'spec' },
  policy_not_found: { status: 404, description: 'The policy does not exist.', source: 'spec' },
  flow_not_found: { status: 404, description: 'The flow does not exist.', source: 'spec' },
  job_not_found: { status: 404, description: 'The job does not exist.', source: 'spec' },
  conflict: { status: 409, description: 'The request conflicts with the current state.', source: 'spec' },
  email_already_exists: { status: 409, description: 'A user with this email address already exists.', source: 'spec' },
  client_id_already_exists: { status: 409, description: 'An application with this client id already exists.', source: 'spec' },
  role_already_assigned: { status: 409, description: 'The role is already assigned.', source: 'spec' },
  validation_error: { status: 422, description: 'The request failed validation.', source: 'spec' },
  invalid_email: { status: 422, description: 'The email address is not valid.', source: 'spec' },
  invalid_password: { status: 422, description: 'The password is not acceptable.', source: 'spec' },
  import_failed: { status: 422, description: 'The import failed.', source: 'spec' },
  rate_limit_exceeded: { status: 429, description: 'Too many requests.', source: 'spec' },
  internal_error: { status: 500, description: 'An unexpected error occurred.', source: 'spec' },
  job_failed: { status: 500, description: 'The job failed.', source: 'spec' },
  export_failed: { status: 500, description: 'The export failed.', source: 'spec' },
  database_error: { status: 500, description: 'The database failed to answer.', source: 'spec' },
  service_unavailable: { status: 503, description: 'The service is temporarily unavailable.', source: 'spec' },
  timeout: { status: 504, description: 'The request timed out.', source: 'spec' },
  // The OAuth endpoints' own codes (RFC 6749 4.1.2.1 and 5.2, RFC 8707, OpenID Connect Core 3.1.2.6).
  invalid_client: { status: 401, description: 'Client authentication failed.', source: 'RFC 6749' },
  invalid_grant: { status: 400, description: 'The grant is invalid, expired or revoked.', source: 'RFC 6749' },
  invalid_scope: { status: 400, description: 'The requested scope is invalid.', source: 'RFC 6749' },
  unauthorized_client: { status: 400, description: 'The client may not use this grant.', source: 'RFC 6749' },
  unsupported_grant_type: { status: 400, description: 'The grant type is not supported.', source: 'RFC 6749' },
  unsupported_response_type: { status: 400, description: 'The response type is not supported.', source: 'RFC 6749' },
  access_denied: { status: 403, description: 'The user or server denied the request.', source: 'RFC 6749' },
  invalid_target: { status: 400, description: 'The requested audience or resource is not allowed.', source: 'RFC 8707' },
  login_required: { status: 400, description: 'The user is not signed in.', source: 'OpenID Connect Core' },
  consent_required: { status: 400, description: 'The user has not consented.', source: 'OpenID Connect Core' },
  request_not_supported: { status: 400, description: 'The request parameter is not supported.', source: 'OpenID Connect Core' },
  request_uri_not_supported: { status: 400, description: 'The request_uri parameter is not supported.', source: 'OpenID Connect Core' },
  // Sender-constrained tokens (RFC 9449 5 and 8; RFC 6750 3.1 for resource requests).
  invalid_dpop_proof: { status: 400, description: 'The DPoP proof is invalid.', source: 'RFC 9449' },
  use_dpop_nonce: { status: 400, description: 'Send a DPoP proof with the server-provided nonce.', source: 'RFC 9449' },
  invalid_token: { status: 401, description: 'The access token is invalid.', source: 'RFC 6750' },
  // The device authorization grant's polling answers at /token (RFC 8628 3.5; access_denied is RFC 6749's, answered there with 400).
  authorization_pending: { status: 400, description: 'The user has not yet completed the authorization.', source: 'RFC 8628' },
  slow_down: { status: 400, description: 'Polling too fast: wait 5 seconds more between requests.', source: 'RFC 8628' },
  expired_token: { status: 400, description: 'The device code has expired.', source: 'RFC 8628' },
  // Pushed authorization requests and request objects.
  invalid_request_uri: { status: 400, description: 'The request_uri is unknown, expired or already used.', source: 'RFC 9126' },
  invalid_request_object: { status: 400, description: 'The request object is invalid.', source: 'RFC 9101' },
  // Dynamic client registration and its management (RFC 7591 3.2.2, RFC 7592).
  invalid_redirect_uri: { status: 400, description: 'A redirect URI is not acceptable.', source: 'RFC 7591' },
  invalid_client_metadata: { status: 400, description: 'A client metadata value is not acceptable.', source: 'RFC 7591' },
  invalid_software_statement: { status: 400, description: 'The software statement is invalid.', source: 'RFC 7591' },
  unapproved_software_statement: { status: 400, description: 'The software statement is not approved for use here.', source: 'RFC 7591' },
} as const satisfies Record<string, CodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;
/** The codes answered with a given status: a class for 404 takes only the 404 codes. */
export type CodeWithStatus<S extends number> = { [K in ErrorCode]: (typeof ERROR_CODES)[K]['status'] extends S ? K : never }[ErrorCode];
/** The codes of the OAuth endpoints' dialect (RFC 6749 5.2 and its extensions, plus invalid_request). */
export type OAuthCode = 'invalid_request' | { [K in ErrorCode]: (typeof ERROR_CODES)[K]['source'] extends 'spec' ? never : K }[ErrorCode];

const describe = (code: ErrorCode): string => ERROR_CODES[code].description;

export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: Details | undefined;
  readonly retryAfter: number | undefined;
  readonly headers: Record<string, string> | undefined;
  constructor(status: number, code: ErrorCode, description: string = describe(code), opts: { details?: Details; retryAfter?: number; headers?: Record<string, string>; cause?: unknown } = {}) {
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
  constructor(description = describe('invalid_request'), details?: Details) { super(400, 'invalid_request', description, details ? { details } : {}); }
}
export class InvalidJson extends AppError {
  constructor() { super(400, 'invalid_json'); }
}
/** Schema violation: 422 validation_error on the admin interface, 400 invalid_request on OAuth endpoints. */
export class ValidationError extends AppError {
  constructor(details: Details, description = describe('validation_error')) { super(422, 'validation_error', description, { details }); }
}
export class Unauthorized extends AppError {
  /** `challenge`: the WWW-Authenticate value, e.g. with RFC 9728 resource_metadata (src/resources/metadata-url.ts). */
  constructor(code: Exclude<CodeWithStatus<401>, 'invalid_client'> = 'unauthorized', description = describe(code), challenge = 'Bearer') {
    super(401, code, description, { headers: { 'WWW-Authenticate': challenge } });
  }
}
export class Forbidden extends AppError {
  constructor(code: Exclude<CodeWithStatus<403>, 'access_denied'> = 'forbidden', description = describe(code)) {
    super(403, code, description);
  }
}
export class NotFound extends AppError {
  constructor(code: CodeWithStatus<404> = 'not_found', description = describe(code)) { super(404, code, description); }
}
export class MethodNotAllowed extends AppError {
  constructor(allow: string[]) { super(405, 'invalid_request', 'The method is not allowed on this resource.', { headers: { Allow: allow.join(', ') } }); }
}
export class Conflict extends AppError {
  constructor(code: CodeWithStatus<409> = 'conflict', description = describe(code)) { super(409, code, description); }
}
export class PayloadTooLarge extends AppError {
  constructor(limit: number) { super(413, 'invalid_request', `The request body exceeds ${limit} bytes.`); }
}
export class RateLimited extends AppError {
  constructor(retryAfter: number, description = describe('rate_limit_exceeded')) {
    super(429, 'rate_limit_exceeded', description, { retryAfter, headers: { 'Retry-After': String(retryAfter) } });
  }
}
export class ServiceUnavailable extends AppError {
  constructor(description = describe('service_unavailable'), retryAfter = 1, cause?: unknown) {
    super(503, 'service_unavailable', description, { retryAfter, headers: { 'Retry-After': String(retryAfter) }, cause });
  }
}
/** An import or export job that was cancelled (400), cannot run (422 import_failed) or failed (500 job_failed, export_failed). */
export class JobError extends AppError {
  constructor(code: 'job_cancelled' | 'import_failed' | 'job_failed' | 'export_failed', description = describe(code)) { super(ERROR_CODES[code].status, code, description); }
}
/** An import file over the row limit: 413 with the import's own code (a body over the byte limit is PayloadTooLarge, 413 invalid_request). */
export class TooManyRows extends AppError {
  constructor(limit: number) { super(413, 'import_failed', `The file has more than ${limit.toLocaleString('en-US')} rows: split it into files of at most that many.`); }
}
/** Load shedding: the same answer as ServiceUnavailable, counted in svc_http_shed_total instead of logged one by one. */
export class Overloaded extends ServiceUnavailable {
  /** Why it was refused, for svc_admission_refusals_total{reason} (src/metrics.ts). */
  readonly reason: 'inflight' | 'crypto_queue' | 'crypto_queue_full' | 'draining';
  constructor(description = 'The server is at capacity; retry shortly.', reason: Overloaded['reason'] = 'inflight') { super(description, 1); this.reason = reason; }
}

/** RFC 6749 section 5.2 errors of the OAuth endpoints, carried inside the spec's error body. */
export class OAuthError extends AppError {
  constructor(code: OAuthCode, description: string = describe(code), status: number = ERROR_CODES[code].status) {
    super(status, code, description,
      code === 'invalid_client' ? { headers: { 'WWW-Authenticate': 'Basic realm="svc", charset="UTF-8"' } } : {});
  }
}

/** A DPoP proof at /token (or /par) that needs the server's nonce: 400 use_dpop_nonce with a fresh one (RFC 9449 8). */
export class UseDpopNonce extends AppError {
  constructor(nonce: string) {
    super(400, 'use_dpop_nonce', describe('use_dpop_nonce'), { headers: { 'DPoP-Nonce': nonce } });
  }
}

/**
 * A refused DPoP (or DPoP-bound) resource request (RFC 9449 7.1): 401 with the DPoP challenge naming the
 * error and the algorithms we accept, never the bare Bearer challenge.
 */
export class DpopUnauthorized extends AppError {
  constructor(code: 'invalid_dpop_proof' | 'invalid_token' | 'use_dpop_nonce', description: string, algs: readonly string[], nonce?: string) {
    const challenge = `DPoP error="${code}", error_description="${description.replace(/["\\]/g, '')}", algs="${algs.join(' ')}"`;
    super(401, code, description, { headers: nonce ? { 'WWW-Authenticate': challenge, 'DPoP-Nonce': nonce } : { 'WWW-Authenticate': challenge } });
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

// A connection to Postgres or Redis that failed, was cut or refused (postgres.js and Node socket codes;
// SQLSTATE class 08 and the shutdown codes 57P01-57P03; too_many_connections).
const UNAVAILABLE_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', '57P01', '57P02', '57P03', '53300']);

/**
 * Whether a thrown value says a dependency is unreachable (a Postgres restart, a connection cut, a Redis
 * outage) rather than that the code is wrong: the client gets 503 and may retry, as for the failures
 * the stores already wrap in ServiceUnavailable.
 */
export function isDependencyUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; name?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (UNAVAILABLE_CODES.has(code) || /^08/.test(code)) return true;
  return e.name === 'MaxRetriesPerRequestError' || (typeof e.message === 'string' && /^(Connection is closed\.|Stream isn't writeable)/.test(e.message));
}

/** The one place errors become HTTP: status, headers and the spec's body for the given interface. */
export function toErrorReply(err: unknown, iface: Interface): ErrorReply {
  if (!(err instanceof AppError) && isDependencyUnavailable(err)) {
    // Still logged (unexpected): an outage must be visible in the logs.
    return { ...toErrorReply(new ServiceUnavailable(), iface), unexpected: true };
  }
  if (!(err instanceof AppError)) {
    const description = describe('internal_error');
    return {
      status: ERROR_CODES.internal_error.status, headers: undefined, unexpected: true,
      body: iface === 'admin'
        ? { error: 'internal_error', error_description: description, message: description }
        : { error: 'internal_error', error_description: description },
    };
  }
  let status = err.status;
  let code: ErrorCode = err.code;
  // RFC 6749 5.2: OAuth endpoints report malformed parameters as invalid_request (400).
  if (iface === 'oauth' && code === 'validation_error') { code = 'invalid_request'; status = ERROR_CODES[code].status; }
  const body: Record<string, unknown> = { error: code, error_description: err.message };
  if (iface === 'admin') body.message = err.message;
  if (err.details) body.details = err.details;
  if (err.retryAfter !== undefined) body.retry_after = err.retryAfter;
  return { status, headers: err.headers, body, unexpected: false };
}
