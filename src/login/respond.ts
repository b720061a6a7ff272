import { AppError, InvalidRequest, toErrorReply } from '../errors.js';
import { errorReply } from '../http/pages.js';
import type { HttpRequest } from '../http/request.js';
import type { Reply } from '../http/types.js';

/** API clients (JSON body, or Accept preferring JSON) get JSON; browsers get pages. The server decides the same way. */
export { wantsJson } from '../http/negotiate.js';

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

/**
 * An expected failure answered by the handler itself (it already knows whether it talks to a browser):
 * the same JSON body or error page the server would send. Anything else is rethrown for the server.
 */
export function failure(err: unknown, json: boolean, iface: 'oauth' | 'public' = 'oauth'): Reply {
  if (!(err instanceof AppError)) throw err;
  return errorReply(toErrorReply(err, iface), !json);
}

export function formString(data: Record<string, unknown>, name: string): string | undefined {
  const v = data[name];
  return typeof v === 'string' ? v : undefined;
}
