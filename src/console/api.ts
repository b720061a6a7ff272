import type { CommonError } from '../generated/types.ts';
import { currentSession } from './auth.ts';

/** An error answer of the admin API, with its validation details by field. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly body: CommonError) { super(body.error_description || body.error); }
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

/** Calls /api/admin with the signed-in person's access token; the types are the server's generated ones. */
export async function api<T>(method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const s = currentSession();
  if (!s) throw new ApiError(401, { error: 'unauthorized', error_description: 'You are signed out.' });
  const headers: Record<string, string> = { authorization: `Bearer ${s.accessToken}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (s.platform && selectedTenant && selectedTenant !== s.tenant) headers['x-tenant-id'] = selectedTenant;
  const res = await fetch(`/api/admin${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 204) return undefined as T;
  const json = await res.json().catch(() => ({ error: 'bad_response', error_description: `The server answered ${res.status}.` }));
  if (!res.ok) throw new ApiError(res.status, json as CommonError);
  return json as T;
}
