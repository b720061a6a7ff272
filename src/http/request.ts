import type { Deps } from '../deps.js';
import type { Span } from '@opentelemetry/api';
import type { HttpResponse } from 'uWebSockets.js';
import { InvalidJson, InvalidRequest } from '../errors.js';
import { checkInput } from './input-bounds.js';
import { canonicalAddress, clientAddress, type TrustedProxies } from './client-address.js';

const textDecoder = new TextDecoder();

/** One request, with everything copied out of uWS up front (its request object dies after the first await). */
export class HttpRequest {
  /** Path parameters, set by the router (a shared empty object for static routes). */
  params: Record<string, string> = NO_PARAMS;
  body: Buffer = EMPTY;
  aborted = false;
  /**
   * Parsed body (validated when the route names a schema), set by the server before the handler runs.
   * Unknown here: route() and adminRoute() hand handlers the type their schema gives it.
   */
  data: unknown = undefined;
  /** Parsed and validated query, set by the server when the route names a query schema. */
  queryData: unknown = undefined;
  /** The request's server span, only while tracing is on (src/tracing/http.ts). */
  span: Span | undefined = undefined;
  /** A sampled request's view of the deps (src/request-deps.ts), made on first use. */
  traced: Deps | undefined = undefined;
  /** The tenant class once the request's tenant is known (src/metrics.ts TENANT_CLASSES; 0 = unknown). */
  tenantClass = 0;
  private _cookies: Record<string, string> | undefined;
  private _ip: string | undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly query: string,
    readonly headers: Record<string, string>,
    readonly requestId: string,
    private readonly res: HttpResponse,
    private readonly trustedProxies?: TrustedProxies,
  ) {}

  header(name: string): string | undefined { return this.headers[name]; }

  /**
   * The client's address (src/http/client-address.ts: the socket peer, or what trusted proxies forwarded),
   * canonical; '' when the connection is gone. Read lazily because most requests never need it.
   */
  get ip(): string {
    if (this._ip === undefined) {
      let socket = '';
      try { socket = socketAddress(textDecoder.decode(this.res.getRemoteAddressAsText())); } catch { /* aborted */ }
      this._ip = clientAddress(socket, this.headers['x-forwarded-for'], this.trustedProxies);
    }
    return this._ip;
  }

  cookies(): Record<string, string> {
    return (this._cookies ??= parseCookies(this.headers.cookie));
  }

  /** Body as JSON; an empty body is an empty object. */
  json(): unknown {
    if (this.body.length === 0) return {};
    let data: unknown;
    // A body nested so deep that the parser runs out of stack is as unreadable as a malformed one.
    try { data = JSON.parse(this.body.toString('utf8')); } catch { throw new InvalidJson(); }
    checkInput(data);
    return data;
  }

  /** Body as application/x-www-form-urlencoded; repeated keys become arrays. */
  form(): Record<string, string | string[]> {
    const data = parseForm(this.body.toString('latin1'));
    checkInput(data);
    return data;
  }

  searchParams(): URLSearchParams {
    const params = new URLSearchParams(this.query);
    for (const [k, v] of params) checkInput({ [k]: v });
    return params;
  }
}

// uWS writes IPv6 peers uncompressed (and IPv4 ones mapped, on a dual-stack socket); a keep-alive
// connection asks for the same text again and again, so the last conversion is kept.
let lastSocketText = '';
let lastSocket = '';
function socketAddress(text: string): string {
  if (text !== lastSocketText) { lastSocket = canonicalAddress(text) ?? text; lastSocketText = text; }
  return lastSocket;
}

const EMPTY = Buffer.alloc(0);
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (!(name in out)) {
      try { out[name] = decodeURIComponent(value); } catch { out[name] = value; }
    }
  }
  return out;
}

/** Parses a urlencoded string; a key given more than once becomes an array (e.g. RFC 8693 `resource`). */
export function parseForm(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  if (!text) return out;
  for (const pair of text.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const k = decodeFormComponent(eq < 0 ? pair : pair.slice(0, eq));
    const v = eq < 0 ? '' : decodeFormComponent(pair.slice(eq + 1));
    const prev = out[k];
    if (prev === undefined) out[k] = v;
    else if (Array.isArray(prev)) prev.push(v);
    else out[k] = [prev, v];
  }
  return out;
}

function decodeFormComponent(s: string): string {
  const plus = s.includes('+') ? s.replace(/\+/g, ' ') : s;
  if (!plus.includes('%')) return plus;
  try {
    // Form bodies are UTF-8 percent-encoded; decode bytes, not Latin-1 code points.
    return decodeURIComponent(plus);
  } catch {
    throw new InvalidRequest('The form body is not validly percent-encoded.');
  }
}

/** Serialises a Set-Cookie value with safe defaults. */
export function serializeCookie(name: string, value: string, opts: { maxAge?: number; path?: string; httpOnly?: boolean; secure?: boolean; sameSite?: 'Lax' | 'Strict' | 'None' } = {}): string {
  let s = `${name}=${encodeURIComponent(value)}; Path=${opts.path ?? '/'}`;
  if (opts.maxAge !== undefined) s += `; Max-Age=${opts.maxAge}`;
  if (opts.httpOnly !== false) s += '; HttpOnly';
  if (opts.secure) s += '; Secure';
  s += `; SameSite=${opts.sameSite ?? 'Lax'}`;
  return s;
}
