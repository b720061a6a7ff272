import { AppError, InvalidRequest, toErrorReply } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import type { Reply } from '../http/types.js';
import { errorPage } from './pages.js';

/** API clients (Accept or Content-Type JSON) get JSON; browsers get pages. */
export function wantsJson(req: HttpRequest): boolean {
  const ct = req.headers['content-type'] ?? '';
  if (ct.startsWith('application/json')) return true;
  const accept = req.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}

/** Body of a login endpoint: JSON from API clients, urlencoded form from browsers. */
export function readBody(req: HttpRequest): { form: boolean; data: Record<string, unknown> } {
  const ct = req.headers['content-type'] ?? '';
  if (ct.startsWith('application/x-www-form-urlencoded')) return { form: true, data: req.form() };
  if (ct.startsWith('application/json') || (ct === '' && req.body.length === 0)) {
    const data = req.json();
    if (!data || typeof data !== 'object' || Array.isArray(data)) throw new InvalidRequest('The body must be a JSON object.');
    return { form: false, data: data as Record<string, unknown> };
  }
  throw new InvalidRequest('Content-Type must be application/json or application/x-www-form-urlencoded.');
}

/** An expected failure as the caller wants it: the spec's JSON error body, or an error page. */
export function failure(err: unknown, json: boolean, iface: 'oauth' | 'public' = 'oauth'): Reply {
  if (!(err instanceof AppError)) throw err;
  const out = toErrorReply(err, iface);
  if (json) return { status: out.status, headers: { ...out.headers, 'Cache-Control': 'no-store' }, body: out.body };
  const p = errorPage(out.status, String(out.body.error_description));
  return { ...p, headers: { ...p.headers, ...out.headers } };
}

export function formString(data: Record<string, unknown>, name: string): string | undefined {
  const v = data[name];
  return typeof v === 'string' ? v : undefined;
}
