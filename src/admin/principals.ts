import { storedScopes } from '../clients/model.js';
import type { Deps } from '../deps.js';
import { Conflict, NotFound, ValidationError } from '../errors.js';
import type { AdminPrincipalCredentialCreate } from '../generated/types.js';
import type { Route } from '../http/types.js';
import { checkInput } from '../http/input-bounds.js';
import { publicJwkFor, thumbprint } from '../principals/jwk.js';
import { credentialStatus, type CredentialRow, type PrincipalRow, type TenantScope } from '../principals/model.js';
import { createPrincipal, resyncPrincipal } from '../principals/service.js';
import { newId } from '../store/ids.js';
import type { NewCredential, PrincipalRepository } from '../store/principals.js';
import { assertGrantable, assertScopesGrantable } from './escalation.js';
import { adminRoute, found, type AuditSpec } from './route.js';
import type { AdminContext } from './types.js';

const READ = 'admin:machine-principals:read';
const WRITE = 'admin:machine-principals:write';
const tags = ['machine-access'];
const BASE = '/api/admin/machine-access/principals';
const MAX_ACCESS_TTL = 86_400;

export function credentialView(c: CredentialRow): Record<string, unknown> {
  return {
    id: c.id, principalId: c.principal_id, kid: c.kid, publicJwkJson: JSON.stringify({ ...c.public_jwk, kid: c.kid, alg: c.alg, use: 'sig' }), alg: c.alg,
    displayName: c.display_name, description: c.description, status: credentialStatus(c), notBefore: c.not_before === null ? null : Number(c.not_before),
    expiresAt: c.expires_at === null ? null : Number(c.expires_at), createdAt: Number(c.created_at), updatedAt: Number(c.updated_at),
  };
}

export function principalView(p: PrincipalRow, creds: CredentialRow[]): Record<string, unknown> {
  return {
    id: p.id, clientId: p.client_id, displayName: p.display_name, description: p.description, principalType: p.principal_type, status: p.status,
    tokenTtlSeconds: Number(p.token_ttl_seconds), createdAt: Number(p.created_at), updatedAt: Number(p.updated_at), permissions: p.permissions,
    tenantScopes: p.tenant_scopes, credentials: creds.map(credentialView),
  };
}

const notFound = () => new NotFound('not_found', 'No such machine access principal.');
const credNotFound = () => new NotFound('not_found', 'No such credential.');

/** tenant_id names the tenant exactly when scope_mode is allow; nobody grants tenants beyond their own reach. */
function checkScopes(ctx: AdminContext, scopes: TenantScope[] | undefined): void {
  if (!scopes) return;
  const details: Record<string, string[]> = {};
  scopes.forEach((s, i) => {
    if (s.scope_mode === 'allow' && !s.tenant_id) details[`tenantScopes.${i}.tenant_id`] = ['is required when scope_mode is allow'];
    if (s.scope_mode !== 'allow' && s.tenant_id) details[`tenantScopes.${i}.tenant_id`] = ['must be null unless scope_mode is allow'];
  });
  if (Object.keys(details).length) throw new ValidationError(details);
  assertScopesGrantable(ctx, scopes);
}

/** The credential to store from a create or rotate body: its public JWK checked, its kid settled. */
async function credentialInput(b: AdminPrincipalCredentialCreate): Promise<NewCredential> {
  let jwkIn: unknown = b.publicJwk;
  if (b.publicJwkJson !== undefined) {
    if (b.publicJwk !== undefined) throw new ValidationError({ publicJwkJson: ['send either publicJwk or publicJwkJson'] });
    try { jwkIn = JSON.parse(b.publicJwkJson); } catch { throw new ValidationError({ publicJwkJson: ['is not valid JSON'] }); }
    // JSON text inside a string escapes the request's own input check: hold it to the same one.
    checkInput(jwkIn, 'publicJwkJson');
  }
  if (jwkIn === undefined) throw new ValidationError({ publicJwk: ['is required (or publicJwkJson)'] });
  const pub = await publicJwkFor(jwkIn, b.alg);
  const notBefore = b.notBefore ?? null;
  const expiresAt = b.expiresAt ?? null;
  if (notBefore !== null && expiresAt !== null && expiresAt <= notBefore) throw new ValidationError({ expiresAt: ['must be after notBefore'] });
  const jwkKid = (jwkIn as { kid?: unknown }).kid;
  const kid = b.kid ?? (typeof jwkKid === 'string' && jwkKid ? jwkKid : await thumbprint(pub));
  return { id: newId('mpc'), kid, publicJwk: pub, alg: b.alg, displayName: b.displayName, description: b.description ?? null, notBefore, expiresAt };
}

/** The principal, locked for the change; a deleted one only changes through delete (`live` false). */
async function load(principals: PrincipalRepository, id: string, live = true): Promise<PrincipalRow> {
  const p = found(await principals.get(id, true), notFound);
  if (live && p.status === 'deleted') throw new Conflict('conflict', 'The principal is deleted.');
  return p;
}

/** Re-derives the backing client and answers the principal as it now is. */
async function resynced(principals: PrincipalRepository, id: string): Promise<{ row: PrincipalRow; view: Record<string, unknown> }> {
  const r = (await resyncPrincipal(principals, id))!;
  return { row: r.principal, view: principalView(r.principal, r.credentials) };
}

const audit = (action: string, severity: AuditSpec['severity'] = 'info'): AuditSpec => ({ action: `machine_principal.${action}`, resourceType: 'machine_principal', severity });

/**
 * Machine access principals (spec: Machine access principal). Each is backed by a private_key_jwt client
 * whose jwks holds the principal's usable credentials; the server only ever sees public keys. Credential
 * validity windows are applied over time by the credential sweeper (principals/sweeper.ts), which the
 * process lifecycle runs.
 */
export function principalRoutes(deps: Deps): Route[] {
  /** After the commit: every process forgets the cached backing client; `cutOff` also revokes its access tokens. */
  const announce = async (d: Deps, tenantId: string, clientId: string, cutOff: boolean) => {
    await d.tokens.clients.changed(clientId, d.trace);
    if (cutOff) await d.tokens.revocations.revokeBefore(tenantId, 'client', clientId, Date.now(), MAX_ACCESS_TTL, d.trace);
  };
  return [
    adminRoute(deps, {
      method: 'GET', path: BASE, permission: READ, tags, query: 'query.admin-principal-list',
      summary: 'List machine access principals of the tenant, newest first', response: { 200: 'admin.principal-list' },
      handler: async ({ query, store }) => {
        const r = await store.principals.list(query);
        const creds = await store.principals.credentialsOf(r.rows.map((p) => p.id));
        return { body: { items: r.rows.map((p) => principalView(p, creds.filter((c) => c.principal_id === p.id))), page: query.page, limit: query.limit, total: r.total } };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: BASE, permission: WRITE, tags, body: 'admin.principal-create',
      summary: 'Create a machine access principal (then register its public keys as credentials)', response: { 201: 'admin.principal' },
      audit: audit('create'),
      handler: async ({ deps: d, ctx, body, mutate }) => {
        const scopes = storedScopes(body.tenantScopes ?? [{ scope_mode: 'none' }]);
        checkScopes(ctx, scopes);
        assertGrantable(ctx, body.permissions);
        const id = newId('mp');
        const out = await mutate(async (_tx, store) => {
          const p = await createPrincipal(store, deps.config.issuer, {
            id, clientId: `mpc_${id.slice(3)}`, displayName: body.displayName, description: body.description ?? null, principalType: body.principalType,
            tokenTtlSeconds: body.tokenTtlSeconds, permissions: body.permissions, tenantScopes: scopes,
          });
          const view = principalView(p, []);
          return { result: { row: p, view }, resourceId: id, after: view };
        });
        await announce(d, ctx.tenantId, out.row.client_id, false);
        return { status: 201, body: out.view };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: `${BASE}/:id`, permission: READ, tags,
      summary: 'Get a machine access principal with its credentials', response: { 200: 'admin.principal' }, errors: [404],
      handler: async ({ params, store }) => {
        const p = found(await store.principals.get(params.id!), notFound);
        return { body: principalView(p, await store.principals.credentialsOf([p.id])) };
      },
    }),
    adminRoute(deps, {
      method: 'PUT', path: `${BASE}/:id`, permission: WRITE, tags, body: 'admin.principal-update',
      summary: 'Update a principal: the fields given replace the stored ones (status active or disabled)', response: { 200: 'admin.principal' },
      errors: [404, 409], audit: audit('update'),
      handler: async ({ deps: d, ctx, body, params, mutate }) => {
        const { tenantScopes, ...rest } = body;
        const patch = { ...rest, ...(tenantScopes ? { tenantScopes: storedScopes(tenantScopes) } : {}) };
        checkScopes(ctx, patch.tenantScopes);
        if (patch.permissions) assertGrantable(ctx, patch.permissions);
        const out = await mutate(async (_tx, { principals }) => {
          const cur = await load(principals, params.id!);
          await principals.update(cur.id, patch);
          const v = await resynced(principals, cur.id);
          return { result: { ...v, wasActive: cur.status === 'active' }, before: principalView(cur, []), after: v.view };
        });
        await announce(d, ctx.tenantId, out.row.client_id, out.wasActive && out.row.status !== 'active');
        return { body: out.view };
      },
    }),
    ...(['disable', 'enable'] as const).map((verb) => adminRoute(deps, {
      method: 'POST', path: `${BASE}/:id/${verb}`, permission: WRITE, tags,
      summary: verb === 'disable' ? 'Disable a principal: its tokens stop working (client_disabled) and are revoked' : 'Enable a disabled principal',
      response: { 200: 'admin.principal' }, errors: [404, 409], audit: audit(verb, verb === 'disable' ? 'warn' : 'info'),
      handler: async ({ deps: d, ctx, params, mutate }) => {
        const out = await mutate(async (_tx, { principals }) => {
          const cur = await load(principals, params.id!);
          await principals.update(cur.id, { status: verb === 'disable' ? 'disabled' : 'active' });
          const v = await resynced(principals, cur.id);
          return { result: v, before: principalView(cur, []), after: v.view };
        });
        await announce(d, ctx.tenantId, out.row.client_id, verb === 'disable');
        return { body: out.view };
      },
    })),
    adminRoute(deps, {
      method: 'DELETE', path: `${BASE}/:id`, permission: WRITE, tags,
      summary: 'Delete a principal: status deleted, credentials revoked, tokens revoked (it stays listable with status=deleted)',
      response: { 204: null }, errors: [404, 409], audit: audit('delete', 'warn'),
      handler: async ({ deps: d, ctx, params, mutate }) => {
        const clientId = await mutate(async (_tx, { principals }) => {
          const cur = await load(principals, params.id!);
          await principals.revokeAllCredentials(cur.id);
          await principals.update(cur.id, { status: 'deleted' });
          await resyncPrincipal(principals, cur.id);
          return { result: cur.client_id, before: principalView(cur, []) };
        });
        await announce(d, ctx.tenantId, clientId, true);
        return { status: 204 };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: `${BASE}/:id/credentials`, permission: WRITE, tags, body: 'admin.principal-credential-create',
      summary: 'Register a public key (JWK; ES256, PS256 or RS256) the principal signs private_key_jwt assertions with',
      response: { 201: 'admin.principal-credential' }, errors: [404, 409], audit: audit('credential_create'),
      handler: async ({ deps: d, ctx, body, params, mutate }) => {
        const input = await credentialInput(body);
        const out = await mutate(async (_tx, { principals }) => {
          const p = await load(principals, params.id!);
          const c = await principals.insertCredential(p.id, input);
          if (!c) throw new Conflict('conflict', 'The principal already has a credential with this kid.');
          await resyncPrincipal(principals, p.id);
          return { result: { c, clientId: p.client_id }, after: credentialView(c), metadata: { credential_id: c.id, kid: c.kid } };
        });
        await announce(d, ctx.tenantId, out.clientId, false);
        return { status: 201, body: credentialView(out.c) };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: `${BASE}/:id/credentials/:credentialId/rotate`, permission: WRITE, tags, body: 'admin.principal-credential-rotate',
      summary: 'Rotate a credential: register its successor; the old one becomes rotating and expires after graceSeconds (default 86400)',
      response: { 200: 'admin.principal-credential-rotation' }, errors: [404, 409], audit: audit('credential_rotate', 'warn'),
      handler: async ({ deps: d, ctx, body, params, mutate }) => {
        const input = await credentialInput(body);
        const credId = params.credentialId!;
        const out = await mutate(async (_tx, { principals }) => {
          const p = await load(principals, params.id!);
          const cur = await liveCredential(principals, p.id, credId);
          const fresh = await principals.insertCredential(p.id, input);
          if (!fresh) throw new Conflict('conflict', 'The principal already has a credential with this kid.');
          const graceEnd = Date.now() + body.graceSeconds * 1000;
          const old = (await principals.setCredentialState(credId, 'rotating', cur.expires_at === null ? graceEnd : Math.min(Number(cur.expires_at), graceEnd)))!;
          await resyncPrincipal(principals, p.id);
          const result = { credential: credentialView(fresh), previous: credentialView(old) };
          return { result: { body: result, clientId: p.client_id }, before: credentialView(cur), after: result, metadata: { credential_id: credId, kid: cur.kid } };
        });
        await announce(d, ctx.tenantId, out.clientId, false);
        return { body: out.body };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: `${BASE}/:id/credentials/:credentialId/revoke`, permission: WRITE, tags, body: 'admin.principal-credential-revoke',
      summary: 'Revoke a credential at once (revokeTokens: also revoke every token the principal holds)',
      response: { 200: 'admin.principal-credential' }, errors: [404, 409], audit: audit('credential_revoke', 'warn'),
      handler: async ({ deps: d, ctx, body, params, mutate }) => {
        const credId = params.credentialId!;
        const out = await mutate(async (_tx, { principals }) => {
          const p = await load(principals, params.id!);
          const cur = await liveCredential(principals, p.id, credId);
          const result = credentialView((await principals.setCredentialState(credId, 'revoked'))!);
          await resyncPrincipal(principals, p.id);
          return { result: { body: result, clientId: p.client_id }, before: credentialView(cur), after: result, metadata: { credential_id: credId, kid: cur.kid } };
        });
        await announce(d, ctx.tenantId, out.clientId, body.revokeTokens);
        return { body: out.body };
      },
    }),
  ];
}

/** A credential of the principal that can still change (not revoked, not expired), locked. */
async function liveCredential(principals: PrincipalRepository, principalId: string, id: string): Promise<CredentialRow> {
  const cur = found(await principals.getCredential(principalId, id), credNotFound);
  const st = credentialStatus(cur);
  if (st === 'revoked' || st === 'expired') throw new Conflict('conflict', `The credential is already ${st}.`);
  return cur;
}
