import type { CommonError } from '../generated/types.ts';
import { currentSession, renew } from './auth.ts';

/** What a person reads for an answer: a refusal (403) says plainly they are not allowed, with the server's reason. */
function messageOf(status: number, body: CommonError): string {
  const said = body.error_description || body.message || body.error;
  if (status === 403) return `You are not allowed to do this. ${said}`;
  return said;
}

/** An error answer of the admin API, with its validation details by field. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly body: CommonError) { super(messageOf(status, body)); }
  get forbidden(): boolean { return this.status === 403; }
  get details(): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(this.body.details ?? {})) if (v) out[k] = v;
    return out;
  }
}

/** The tenant a platform administrator is looking at (X-Tenant-Id); others always act on their own. */
let selectedTenant: string | null = null;
export function selectTenant(t: string | null): void { selectedTenant = t; }
export function viewedTenant(): string | null { return selectedTenant ?? currentSession()?.tenant ?? null; }

/**
 * Calls /api/admin with the signed-in person's access token; the types are the server's generated ones.
 * An access token that expired meanwhile (a renewal missed: a sleeping laptop, a dropped connection) is
 * renewed and the call made once more, so the person never sees it.
 */
export async function api<T>(method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const res = await call(method, path, body);
  if (res.status === 204) return undefined as T;
  const json = await res.json().catch(() => ({ error: 'bad_response', error_description: `The server answered ${res.status}.` }));
  if (!res.ok) throw new ApiError(res.status, json as CommonError);
  return json as T;
}

/** The same call as a file (a log chunk, an export): its bytes, for the browser to save. */
export async function download(method: 'GET' | 'POST', path: string): Promise<Blob> {
  const res = await call(method, path);
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => ({ error: 'bad_response', error_description: `The server answered ${res.status}.` })) as CommonError);
  return res.blob();
}

async function call(method: string, path: string, body?: unknown, again = true): Promise<Response> {
  const s = currentSession();
  if (!s) throw new ApiError(401, { error: 'unauthorized', error_description: 'Your session expired. Sign in again.' });
  const headers: Record<string, string> = { authorization: `Bearer ${s.accessToken}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (s.platform && selectedTenant && selectedTenant !== s.tenant) headers['x-tenant-id'] = selectedTenant;
  const res = await fetch(`/api/admin${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 401 && again && (await renew(s.tenant))) return call(method, path, body, false);
  return res;
}
