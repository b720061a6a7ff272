import { advertised, keyAlgOf, type SigningAlg } from '../tokens/algorithms.js';
import type { Client } from './model.js';

/**
 * The cross-field rules of client metadata that the JSON Schema (schemas/common/client-metadata.json)
 * cannot say, shared by the admin API (src/admin/clients.ts) and dynamic registration
 * (src/registration/metadata.ts). Each problem is keyed by the field it concerns; the caller turns them
 * into its interface's error (422 validation_error, or RFC 7591's invalid_client_metadata).
 */
export interface MetadataFields {
  authMethod: Client['authMethod'];
  jwks?: Client['jwks'] | undefined;
  introspectionSignedResponseAlg?: string | null | undefined;
  idTokenSignedResponseAlg?: string | null | undefined;
  /** Checked when given (an admin update that leaves them out keeps the stored ones). */
  redirectUris?: readonly string[] | undefined;
  postLogoutRedirectUris?: readonly string[] | undefined;
}

/** JWK members that are private key material (RFC 7518 6.2.2, 6.3.2, 6.4). */
const PRIVATE_MEMBERS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']);

/** `tenantAlgs`: the algorithms the client's tenant signs with (KeyRing.algsOf), its default first. */
export function metadataProblems(m: MetadataFields, tenantAlgs: readonly SigningAlg[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  // Signed introspection answers and ID tokens are made with the tenant's keys, so in an algorithm it enables.
  const enabled = (alg: string) => tenantAlgs.includes(keyAlgOf(alg)!);
  const why = `must be one of the algorithms this tenant signs with: ${advertised(tenantAlgs).join(', ')}`;
  if (m.introspectionSignedResponseAlg && !enabled(m.introspectionSignedResponseAlg)) out.introspection_signed_response_alg = [why];
  if (m.idTokenSignedResponseAlg && !enabled(m.idTokenSignedResponseAlg)) out.id_token_signed_response_alg = [why];
  if (m.authMethod === 'private_key_jwt' && !m.jwks) out.jwks = ['is required for private_key_jwt'];
  // A registered key is the client's public key; private members would be a secret stored in the clear.
  if (m.jwks?.keys.some((k) => k && typeof k === 'object' && Object.keys(k).some((member) => PRIVATE_MEMBERS.has(member)))) (out.jwks ??= []).push('must hold public keys only');
  // An operator's client is held to the redirect rules of a self-registered one: the same attacks apply.
  for (const [field, uris] of [['redirect_uris', m.redirectUris], ['post_logout_redirect_uris', m.postLogoutRedirectUris]] as const) {
    for (const uri of uris ?? []) {
      const problem = redirectUriProblem(uri);
      if (problem) (out[field] ??= []).push(`${JSON.stringify(uri)} ${problem}`);
    }
  }
  return out;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Redirect URI rules of dynamic registration (RFC 9700 2.1, RFC 8252 7.3 and 8.3): an absolute https URI,
 * or http on a loopback host (any port); never a fragment (RFC 6749 3.1.2), never a wildcard, never
 * userinfo. Null when the URI is acceptable, else why not.
 */
export function redirectUriProblem(uri: string): string | null {
  if (uri.includes('*')) return 'must not contain a wildcard';
  let u: URL;
  try { u = new URL(uri); } catch { return 'must be an absolute URI'; }
  if (uri.includes('#')) return 'must not contain a fragment';
  if (u.username || u.password) return 'must not contain user information';
  if (u.protocol === 'https:') return null;
  if (u.protocol === 'http:' && LOOPBACK_HOSTS.has(u.hostname)) return null;
  return 'must use https (http only on a loopback host: localhost, 127.0.0.1 or [::1])';
}

/**
 * Whether `uri` is one of the client's registered redirect URIs: the exact string (RFC 9700 2.1), or, for
 * a registered http URI on a loopback host, the same URI with any port (RFC 8252 7.3: a native app
 * listens on whatever port the system gives it).
 */
export function redirectUriRegistered(registered: readonly string[], uri: string): boolean {
  if (registered.includes(uri)) return true;
  const asked = loopback(uri);
  if (!asked) return false;
  return registered.some((r) => {
    const reg = loopback(r);
    return reg !== null && reg.hostname === asked.hostname && reg.pathname === asked.pathname && reg.search === asked.search && reg.hash === '' && asked.hash === '';
  });
}

/** The URL of an http URI on a loopback host, else null. */
function loopback(uri: string): URL | null {
  if (!uri.startsWith('http://')) return null;
  try {
    const u = new URL(uri);
    return LOOPBACK_HOSTS.has(u.hostname) && !u.username && !u.password ? u : null;
  } catch { return null; }
}
