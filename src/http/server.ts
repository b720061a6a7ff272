import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import uws from 'uWebSockets.js';
import type { HttpResponse, HttpRequest as UwsRequest, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { AppError, InvalidRequest, MethodNotAllowed, NotFound, Overloaded, PayloadTooLarge, toErrorReply, ValidationError, type Interface } from '../errors.js';
import type { Logger } from '../log.js';
import { countTenantClass, httpDuration, httpRequestTally, inflightGauge, refusals, shedCounter, type Tally } from '../metrics.js';
import { HttpRequest } from './request.js';
import type { TrustedProxies } from './client-address.js';
import type { Router } from './router.js';
import type { Reply, Route } from './types.js';
import { responseValidators } from '../generated/index.js';
import { wantsJson } from './negotiate.js';
import { errorReply } from './pages.js';
import { errorDetails, validate, validatorFor } from './validate.js';
import { checkInput } from './input-bounds.js';
import { endServerSpan, spanIds, startServerSpan } from '../tracing/http.js';
import { tracingOn } from '../tracing/tracer.js';

/** Refuses to run on the pure-Node fallback that the uWS package silently loads when its binary fails. */
export function assertNativeUws(): void {
  if (typeof (uws as unknown as { getParts?: unknown }).getParts !== 'function') {
    throw new Error('uWebSockets.js native module is not loaded (fallback implementation detected); refusing to start');
  }
}

export interface ServerOptions {
  host: string;
  port: number;
  bodyLimitBytes: number;
  maxInflight: number;
  /** X-Debug: true adds a debug object to error bodies only when this is set (NODE_ENV=development). */
  debugErrors: boolean;
  /**
   * Holds every JSON reply to its route's response schema, closed to undeclared properties; a mismatch
   * becomes a 500 that names it (NODE_ENV=test: the suite fails on a reply that drifts from its schema).
   */
  checkResponses?: boolean;
  /** Peers whose X-Forwarded-For names the client (TRUSTED_PROXIES; src/http/client-address.ts). */
  trustedProxies?: TrustedProxies;
  log: Logger;
}

const STATUS_LINES: string[] = [];
for (const [code, text] of Object.entries(STATUS_CODES)) STATUS_LINES[Number(code)] = `${code} ${text}`;
const REQUEST_ID_RE = /^[A-Za-z0-9._:@-]{1,128}$/;
/** Longest request target (path and query) answered normally; longer is 414. */
export const MAX_TARGET_BYTES = 8192;
/** Largest header block (names and values) answered normally; larger is 431. */
export const MAX_HEADER_BYTES = 32768;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/**
 * A refusal of a body still arriving (413, or 414/431 with a body) keeps the connection: closing it on
 * unread bytes makes the kernel reset it, and a client still sending loses the answer before reading it
 * (curl uploading 2 or 10 MB without Expect: 5 of 20 got no 413). Kept, uWS reads and drops the rest
 * of the body, and the connection serves the next request.
 */
const CLOSE_WITH_BODY_PENDING = false;
const SECRET_FIELDS = /^(client_secret|secret|password|token|registration_access_token|subject_token|actor_token|refresh_token|code|code_verifier|device_code|user_code|client_assertion|key|private_key)$/;

/** A uWS app serving the router, with body limits, in-flight budget, validation and one error mapping. */
export class HttpServer {
  private readonly app: TemplatedApp;
  private listenSocket: us_listen_socket | null = null;
  private inflight = 0;
  private drainWaiters: Array<() => void> = [];
  private closing = false;
  boundPort = 0;
  /** One line per request at debug level; checked once so the hot path pays nothing when it is off. */
  private readonly accessLog: boolean;

  constructor(private readonly router: Router, private readonly opts: ServerOptions) {
    assertNativeUws();
    this.accessLog = opts.log.isLevelEnabled('debug');
    // Resolve every named schema now so a typo fails at start-up, not on the first request.
    for (const r of router.routes) {
      if (r.bodySchema) validatorFor(r.bodySchema);
      if (r.querySchema) validatorFor(r.querySchema);
    }
    this.app = uws.App();
    this.app.any('/*', (res, req) => this.onRequest(res, req));
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(this.opts.host, this.opts.port, (sock) => {
        if (!sock) { reject(new Error(`cannot listen on ${this.opts.host}:${this.opts.port}`)); return; }
        this.listenSocket = sock;
        this.boundPort = uws.us_socket_local_port(sock);
        resolve(this.boundPort);
      });
    });
  }

  get inflightCount(): number { return this.inflight; }

  /** Stops accepting connections, waits for in-flight requests (up to timeoutMs), then closes all sockets. */
  async drain(timeoutMs: number): Promise<boolean> {
    this.closing = true;
    if (this.listenSocket) { uws.us_listen_socket_close(this.listenSocket); this.listenSocket = null; }
    let drained = this.inflight === 0;
    if (!drained) {
      drained = await new Promise<boolean>((resolve) => {
        const t = setTimeout(() => resolve(false), timeoutMs);
        this.drainWaiters.push(() => { clearTimeout(t); resolve(true); });
      });
    }
    // uWS flushes corked writes made outside its own callbacks on its next loop turn; closing sockets
    // before then would drop the last responses, so give it a moment.
    await new Promise((r) => setTimeout(r, 25));
    (this.app as unknown as { close(): void }).close();
    return drained;
  }

  private onRequest(res: HttpResponse, uReq: UwsRequest): void {
    const started = performance.now();
    const method = uReq.getMethod().toUpperCase();
    const path = uReq.getUrl();
    const query = uReq.getQuery() ?? '';
    const headers: Record<string, string> = {};
    // Repeated header lines are one comma list (RFC 9110 5.3); X-Forwarded-For's order matters (client-address.ts).
    uReq.forEach((k, v) => { headers[k] = (k === 'x-forwarded-for' || k === 'dpop') && headers[k] !== undefined ? `${headers[k]}, ${v}` : v; });
    const incomingId = headers['x-request-id'];
    const requestId = incomingId !== undefined && REQUEST_ID_RE.test(incomingId) ? incomingId : randomUUID();
    const req = new HttpRequest(method, path, query, headers, requestId, res, this.opts.trustedProxies);
    // An abort while the body is still arriving means no handler will ever run to release the slot.
    let readingBody = false;
    res.onAborted(() => {
      req.aborted = true;
      if (readingBody) { readingBody = false; this.release(); }
    });

    // Oversized request lines and header blocks get the spec's error body, as far as uWS lets them reach
    // us: its parser drops some before any callback runs (docs/decisions.md, issue 29 item 5).
    const refusedHead = path.length + query.length > MAX_TARGET_BYTES
      ? new AppError(414, 'invalid_request', `The request target is longer than ${MAX_TARGET_BYTES} bytes.`)
      : headerSize(headers) > MAX_HEADER_BYTES ? new AppError(431, 'invalid_request', `The request headers are larger than ${MAX_HEADER_BYTES} bytes.`) : null;
    if (refusedHead) {
      // Closed after the answer only when no body follows (CLOSE_WITH_BODY_PENDING says why).
      const hasBody = Number(headers['content-length'] ?? 0) > 0 || headers['transfer-encoding'] !== undefined;
      this.sendError(res, req, refusedHead, path.startsWith('/api/') ? 'admin' : 'public', undefined, started, 'oversized', !hasBody);
      return;
    }

    const match = this.router.match(method, path);
    if (match.kind !== 'route') {
      const err = match.kind === 'method' ? new MethodNotAllowed(match.allow) : new NotFound('not_found', 'No such endpoint.');
      this.sendError(res, req, err, path.startsWith('/api/') ? 'admin' : 'public', undefined, started, 'unmatched');
      return;
    }
    const route = match.route;
    req.params = match.params;
    if (this.inflight >= this.opts.maxInflight || this.closing) {
      this.sendError(res, req, this.closing ? new Overloaded('The server is shutting down; retry shortly.', 'draining') : new Overloaded(), route.iface, route, started, route.path);
      return;
    }
    this.inflight++;
    inflightGauge.inc();

    const wantsBody = route.body !== 'none' && BODY_METHODS.has(method);
    if (!wantsBody) { void this.run(res, req, route, started); return; }

    const limit = route.bodyLimit ?? this.opts.bodyLimitBytes;
    const declared = headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) {
      this.finishError(res, req, new PayloadTooLarge(limit), route, started, CLOSE_WITH_BODY_PENDING);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    readingBody = true;
    res.onData((ab, isLast) => {
      if (!readingBody) return;
      size += ab.byteLength;
      if (size > limit) {
        readingBody = false;
        this.finishError(res, req, new PayloadTooLarge(limit), route, started, CLOSE_WITH_BODY_PENDING);
        return;
      }
      // uWS reuses the chunk's memory after this callback returns: copy it.
      chunks.push(Buffer.from(ab.slice(0)));
      if (isLast) {
        readingBody = false;
        req.body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        void this.run(res, req, route, started);
      }
    });
  }

  /** Runs the route, in a server span when tracing is on and the request is sampled (checked here, so untraced requests make no span). */
  private run(res: HttpResponse, req: HttpRequest, route: Route, started: number): Promise<void> {
    if (tracingOn) startServerSpan(req, route.path);
    return this.dispatch(res, req, route, started);
  }

  private async dispatch(res: HttpResponse, req: HttpRequest, route: Route, started: number): Promise<void> {
    let reply: Reply;
    try {
      if (route.authenticate) await route.authenticate(req);
      prepare(req, route);
      reply = await route.handler(req);
      if (this.opts.checkResponses) checkReply(route, reply);
    } catch (err) {
      this.finishError(res, req, err, route, started, false);
      return;
    }
    this.release();
    if (req.aborted) return;
    const status = reply.status ?? 200;
    let body: string | Buffer | undefined;
    let type = reply.type;
    if (reply.body === undefined || reply.body === null) body = undefined;
    else if (typeof reply.body === 'string' || Buffer.isBuffer(reply.body)) body = reply.body;
    else { body = JSON.stringify(reply.body); type ??= 'application/json'; }
    if (this.accessLog) this.opts.log.debug({ reqId: req.requestId, ...spanIds(req.span), method: req.method, route: route.path, status }, 'request');
    res.cork(() => {
      res.writeStatus(STATUS_LINES[status] ?? String(status));
      res.writeHeader('X-Request-ID', req.requestId);
      if (type) res.writeHeader('Content-Type', type);
      if (reply.headers) for (const k in reply.headers) res.writeHeader(k, reply.headers[k]!);
      if (reply.cookies) for (const c of reply.cookies) res.writeHeader('Set-Cookie', c);
      res.end(body);
    });
    observe(route.path, req.method, status, started, req.tenantClass);
    if (req.span) endServerSpan(req.span, status);
  }

  private release(): void {
    this.inflight--;
    inflightGauge.dec();
    if (this.inflight === 0 && this.drainWaiters.length) {
      const w = this.drainWaiters; this.drainWaiters = [];
      for (const fn of w) fn();
    }
  }

  private finishError(res: HttpResponse, req: HttpRequest, err: unknown, route: Route, started: number, closeConnection: boolean): void {
    this.release();
    this.sendError(res, req, err, route.iface, route, started, route.path, closeConnection);
  }

  private sendError(res: HttpResponse, req: HttpRequest, err: unknown, iface: Interface, route: Route | undefined, started: number, label: string, closeConnection = false): void {
    const out = toErrorReply(err, iface);
    if (out.unexpected) this.opts.log.error({ err, reqId: req.requestId, ...spanIds(req.span), route: label }, 'unhandled error');
    // A log line per shed would cost most exactly when the server is saturated.
    else if (err instanceof Overloaded) { shedCounter.inc(); refusals[err.reason].inc(); }
    else if (out.status >= 500) this.opts.log.warn({ reqId: req.requestId, ...spanIds(req.span), route: label, error_code: out.body.error, cause: (err as AppError).cause }, 'request failed');
    if (this.opts.debugErrors && req.headers['x-debug'] === 'true') {
      out.body.debug = {
        stack_trace: err instanceof Error ? err.stack ?? '' : String(err),
        request_body: redactedBody(req),
        timestamp: new Date().toISOString(),
      };
    }
    observe(label, req.method, out.status, started, req.tenantClass);
    if (req.span) endServerSpan(req.span, out.status, err);
    if (this.accessLog) this.opts.log.debug({ reqId: req.requestId, ...spanIds(req.span), method: req.method, route: label, status: out.status, error_code: out.body.error }, 'request');
    if (req.aborted) return;
    // Pages answer a browser with the error page; everything else, and API clients of pages, get JSON.
    const reply = errorReply(out, route?.html === true && !wantsJson(req));
    res.cork(() => {
      res.writeStatus(STATUS_LINES[out.status] ?? String(out.status));
      res.writeHeader('X-Request-ID', req.requestId);
      if (reply.type) res.writeHeader('Content-Type', reply.type);
      if (reply.headers) for (const k in reply.headers) res.writeHeader(k, reply.headers[k]!);
      res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body), closeConnection);
    });
  }
}

/** Bytes of a header block as counted against MAX_HEADER_BYTES (names, values, separators). */
function headerSize(headers: Record<string, string>): number {
  let n = 0;
  for (const k in headers) n += k.length + headers[k]!.length + 4;
  return n;
}

/** Parses and validates body and query before the handler runs, per the route's declaration. */
function prepare(req: HttpRequest, route: Route): void {
  if (route.querySchema) {
    const q: Record<string, string | string[]> = {};
    for (const [k, v] of new URLSearchParams(req.query)) {
      const prev = q[k];
      q[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    checkInput(q);
    validate(validatorFor(route.querySchema), q);
    // Again after coercion: Ajv coerces "1e400" to Infinity and lets it through its own bounds.
    checkInput(q);
    req.queryData = q;
  }
  if (route.body === 'json' && BODY_METHODS.has(req.method)) {
    const ct = req.headers['content-type'] ?? '';
    if (req.body.length > 0 && !ct.startsWith('application/json') && !ct.includes('+json')) {
      throw new InvalidRequest('Content-Type must be application/json.');
    }
    const data = req.json();
    if (route.bodySchema) {
      try {
        validate(validatorFor(route.bodySchema), data);
      } catch (err) {
        throw route.bodyError && err instanceof ValidationError ? route.bodyError(err) : err;
      }
    }
    req.data = data;
  } else if (route.body === 'form' && BODY_METHODS.has(req.method)) {
    const ct = req.headers['content-type'] ?? '';
    if (!ct.startsWith('application/x-www-form-urlencoded')) {
      throw new InvalidRequest('Content-Type must be application/x-www-form-urlencoded.');
    }
    const data = req.form();
    if (route.bodySchema) validate(validatorFor(route.bodySchema), data);
    req.data = data;
  }
}

/**
 * The test suite's guard: a JSON reply must match the schema its route documents for that status,
 * and an error a handler answers itself (pages render their own) must be the spec's error body.
 * Pages and other non-JSON bodies are not described by schemas and pass as they are.
 */
function checkReply(route: Route, reply: Reply): void {
  const responses = route.doc?.responses;
  if (!responses) return;
  const where = `${route.method} ${route.path}`;
  const status = reply.status ?? 200;
  const body = jsonOf(reply);
  if (status >= 400) {
    if (body !== NOT_JSON && body !== null) holdTo(where, 'common.error', body);
    return;
  }
  const id = responses[status];
  if (id === undefined) throw new Error(`${where} answered ${status}, which its documentation does not list`);
  if (id === null) {
    if (body !== NOT_JSON && body !== null) throw new Error(`${where} answered a JSON body with ${status}, documented as empty`);
    return;
  }
  if (body !== NOT_JSON) holdTo(where, id, body);
}

const NOT_JSON = Symbol('not JSON');

/** The reply's body as the client parses it: objects round-trip through JSON, JSON text is parsed; null when there is none. */
function jsonOf(reply: Reply): unknown {
  const b = reply.body;
  if (b === undefined || b === null) return null;
  if (typeof b === 'string' || Buffer.isBuffer(b)) return reply.type?.startsWith('application/json') ? JSON.parse(b.toString()) : NOT_JSON;
  return JSON.parse(JSON.stringify(b));
}

function holdTo(where: string, id: string, body: unknown): void {
  const v = responseValidators[id];
  if (!v) throw new Error(`${where}: no response schema ${id}`);
  if (!v(body)) throw new Error(`${where} reply does not match ${id}: ${JSON.stringify(errorDetails(v.errors ?? []))}`);
}

interface RouteMetrics { duration: ReturnType<typeof httpDuration.labels>; byStatus: Map<number, Tally> }
/** Label-bound metric children per route and method: prom-client hashes a label object on every call otherwise. */
const routeMetrics = new Map<string, RouteMetrics>();

function observe(route: string, method: string, status: number, started: number, tenantClass: number): void {
  const key = method + route;
  let m = routeMetrics.get(key);
  if (!m) {
    m = { duration: httpDuration.labels(route, method), byStatus: new Map() };
    // Unmatched requests carry whatever method the client sent: bound what is kept.
    if (routeMetrics.size < 1024) routeMetrics.set(key, m);
  }
  let counter = m.byStatus.get(status);
  if (!counter) { counter = httpRequestTally(route, method, String(status)); m.byStatus.set(status, counter); }
  counter.inc();
  countTenantClass(tenantClass, status);
  // Every 429, thrown (RateLimited) or rendered by a page itself, is a rate-limit refusal.
  if (status === 429) refusals.rate_limit.inc();
  m.duration.observe((performance.now() - started) / 1000);
}

function redactedBody(req: HttpRequest): unknown {
  if (req.body.length === 0) return null;
  try {
    const ct = req.headers['content-type'] ?? '';
    const obj = ct.startsWith('application/x-www-form-urlencoded') ? { ...req.form() } : JSON.parse(req.body.toString('utf8'));
    return redactSecrets(obj, 0);
  } catch {
    return '[unparseable]';
  }
}

/** JWK members that are private key material (RFC 7518 6.2.2, 6.3.2, 6.4; RFC 8037 2): redacted wherever a JWK appears. */
const JWK_PRIVATE = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']);

/** A copy with every secret field, and every private member of anything shaped like a JWK, replaced at any depth. */
export function redactSecrets(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return redactString(v, depth);
  if (v === null || typeof v !== 'object') return v;
  if (depth > 32) return '[truncated]';
  if (Array.isArray(v)) return v.map((x) => redactSecrets(x, depth + 1));
  const o = v as Record<string, unknown>;
  const jwk = typeof o.kty === 'string';
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o)) {
    out[k] = SECRET_FIELDS.test(k) || (jwk && JWK_PRIVATE.has(k)) ? '[redacted]' : redactSecrets(o[k], depth + 1);
  }
  return out;
}

/**
 * A string field can carry a key as JSON text (`publicJwkJson`) or PEM: JSON text is redacted as the
 * object it parses to and given back as text; JSON-looking text that does not parse, and any PEM private
 * key, is withheld whole, since what it hides cannot be told apart from key material.
 */
function redactString(s: string, depth: number): string {
  if (s.includes('PRIVATE KEY-----')) return '[redacted]';
  const head = s.trimStart()[0];
  if (head !== '{' && head !== '[') return s;
  let parsed: unknown;
  try { parsed = JSON.parse(s); } catch { return '[unparseable]'; }
  return JSON.stringify(redactSecrets(parsed, depth + 1));
}
