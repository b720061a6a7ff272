import type { Deps } from '../deps.js';
import { Conflict, NotFound, ValidationError } from '../errors.js';
import type { Route } from '../http/types.js';
import { publicJwkFor, thumbprint } from '../principals/jwk.js';
import { credentialStatus, type CredentialAlg, type CredentialRow, type PrincipalRow, type TenantScope } from '../principals/model.js';
import {
  credentialsOf, getCredential, getPrincipal, insertCredential, listPrincipals, revokeAllCredentials, setCredentialState, updatePrincipal, type PrincipalPatch,
} from '../principals/repository.js';
import { createPrincipal, resyncPrincipal } from '../principals/service.js';
import { startCredentialSweeper } from '../principals/sweeper.js';
import type { TxSql } from '../store/sql.js';
import { adminContext, type AdminContext } from './context.js';
import { assertGrantable, assertScopesGrantable } from './escalation.js';
import { audited } from './mutate.js';
import { newId } from './pagination.js';

const READ = 'admin:machine-principals:read';
const WRITE = 'admin:machine-principals:write';
const tags = ['machine-access'];
const BASE = '/api/admin/machine-access/principals';
const MAX_ACCESS_TTL = 86_400;
const DEFAULT_GRACE_SECONDS = 86_400;

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

interface CredentialBody { publicJwk?: Record<string, unknown>; publicJwkJson?: string; alg: CredentialAlg; kid?: string; displayName: string; description?: string | null; notBefore?: number | null; expiresAt?: number | null }

function credentialInput(b: CredentialBody) {
  let jwkIn: unknown = b.publicJwk;
  if (b.publicJwkJson !== undefined) {
    if (b.publicJwk !== undefined) throw new ValidationError({ publicJwkJson: ['send either publicJwk or publicJwkJson'] });
    try { jwkIn = JSON.parse(b.publicJwkJson); } catch { throw new ValidationError({ publicJwkJson: ['is not valid JSON'] }); }
  }
  if (jwkIn === undefined) throw new ValidationError({ publicJwk: ['is required (or publicJwkJson)'] });
  const pub = publicJwkFor(jwkIn, b.alg);
  const notBefore = b.notBefore ?? null;
  const expiresAt = b.expiresAt ?? null;
  if (notBefore !== null && expiresAt !== null && expiresAt <= notBefore) throw new ValidationError({ expiresAt: ['must be after notBefore'] });
  const jwkKid = (jwkIn as { kid?: unknown }).kid;
  const kid = b.kid ?? (typeof jwkKid === 'string' && jwkKid ? jwkKid : thumbprint(pub));
  return { id: newId('mpc'), kid, publicJwk: pub, alg: b.alg, displayName: b.displayName, description: b.description ?? null, notBefore, expiresAt };
}

/**
 * Machine access principals (spec: Machine access principal). Each is backed by a private_key_jwt client
 * whose jwks holds the principal's usable credentials; the server only ever sees public keys.
 */
export function principalRoutes(deps: Deps): Route[] {
  startCredentialSweeper(deps);
  const load = async (tx: TxSql, ctx: AdminContext, id: string, live = true) => {
    const p = await getPrincipal(tx, ctx.tenantId, id, true);
    if (!p) throw notFound();
    if (live && p.status === 'deleted') throw new Conflict('conflict', 'The principal is deleted.');
    return p;
  };
  const view = async (tx: TxSql, tenantId: string, id: string) => {
    const r = (await resyncPrincipal(tx, tenantId, id))!;
    return { row: r.principal, view: principalView(r.principal, r.credentials) };
  };
  const statusRoute = (verb: 'disable' | 'enable'): Route => ({
    method: 'POST', path: `${BASE}/:id/${verb}`, iface: 'admin', body: 'none',
    doc: { summary: verb === 'disable' ? 'Disable a principal: its tokens stop working (client_disabled) and are revoked' : 'Enable a disabled principal', tags, permission: WRITE, responses: { 200: 'admin.principal' }, errors: [401, 403, 404, 409], security: 'bearer' },
    handler: async (req) => {
      const ctx = await adminContext(deps, req, WRITE);
      const id = req.params.id!;
      const out = await audited(deps, ctx, req, { action: `machine_principal.${verb}`, resourceType: 'machine_principal', resourceId: id, severity: verb === 'disable' ? 'warn' : 'info' }, async (tx) => {
        const cur = await load(tx, ctx, id);
        await updatePrincipal(tx, ctx.tenantId, id, { status: verb === 'disable' ? 'disabled' : 'active' });
        const v = await view(tx, ctx.tenantId, id);
        return { result: v, before: principalView(cur, []), after: v.view };
      });
      await deps.tokens.clients.changed(out.row.client_id);
      if (verb === 'disable') await deps.tokens.revocations.revokeBefore(ctx.tenantId, 'client', out.row.client_id, Date.now(), MAX_ACCESS_TTL);
      return { body: out.view };
    },
  });
  const credentialAction = (verb: 'rotate' | 'revoke'): Route => ({
    method: 'POST', path: `${BASE}/:id/credentials/:credentialId/${verb}`, iface: 'admin', body: 'json', bodySchema: verb === 'rotate' ? 'admin.principal-credential-rotate' : 'admin.principal-credential-revoke',
    doc: {
      summary: verb === 'rotate'
        ? 'Rotate a credential: register its successor; the old one becomes rotating and expires after graceSeconds (default 86400)'
        : 'Revoke a credential at once (revokeTokens: also revoke every token the principal holds)',
      tags, permission: WRITE, responses: { 200: verb === 'rotate' ? 'admin.principal-credential-rotation' : 'admin.principal-credential' }, errors: [401, 403, 404, 409, 422], security: 'bearer',
    },
    handler: async (req) => {
      const ctx = await adminContext(deps, req, WRITE);
      const id = req.params.id!;
      const credId = req.params.credentialId!;
      const b = req.data as CredentialBody & { graceSeconds?: number; revokeTokens?: boolean };
      const input = verb === 'rotate' ? credentialInput(b) : null;
      const out = await audited(deps, ctx, req, { action: `machine_principal.credential_${verb}`, resourceType: 'machine_principal', resourceId: id, severity: 'warn' }, async (tx) => {
        const p = await load(tx, ctx, id);
        const cur = await getCredential(tx, ctx.tenantId, id, credId);
        if (!cur) throw credNotFound();
        const st = credentialStatus(cur);
        if (st === 'revoked' || st === 'expired') throw new Conflict('conflict', `The credential is already ${st}.`);
        let result: Record<string, unknown>;
        if (verb === 'rotate') {
          const fresh = await insertCredential(tx, ctx.tenantId, id, input!);
          if (!fresh) throw new Conflict('conflict', 'The principal already has a credential with this kid.');
          const graceEnd = Date.now() + (b.graceSeconds ?? DEFAULT_GRACE_SECONDS) * 1000;
          const old = await setCredentialState(tx, ctx.tenantId, credId, 'rotating', cur.expires_at === null ? graceEnd : Math.min(Number(cur.expires_at), graceEnd));
          result = { credential: credentialView(fresh), previous: credentialView(old) };
        } else {
          result = credentialView(await setCredentialState(tx, ctx.tenantId, credId, 'revoked'));
        }
        await resyncPrincipal(tx, ctx.tenantId, id);
        return { result: { body: result, clientId: p.client_id }, before: credentialView(cur), after: result, metadata: { credential_id: credId, kid: cur.kid } };
      });
      await deps.tokens.clients.changed(out.clientId);
      if (verb === 'revoke' && b.revokeTokens) await deps.tokens.revocations.revokeBefore(ctx.tenantId, 'client', out.clientId, Date.now(), MAX_ACCESS_TTL);
      return { body: out.body };
    },
  });

  return [
    {
      method: 'GET', path: BASE, iface: 'admin', querySchema: 'query.admin-principal-list',
      doc: { summary: 'List machine access principals of the tenant, newest first', tags, permission: READ, responses: { 200: 'admin.principal-list' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const q = req.queryData as { page: number; limit: number; status?: string; principal_type?: string };
        const r = await listPrincipals(deps.sql, ctx.tenantId, q);
        const creds = await credentialsOf(deps.sql, ctx.tenantId, r.rows.map((p) => p.id));
        return { body: { items: r.rows.map((p) => principalView(p, creds.filter((c) => c.principal_id === p.id))), page: q.page, limit: q.limit, total: r.total } };
      },
    },
    {
      method: 'POST', path: BASE, iface: 'admin', body: 'json', bodySchema: 'admin.principal-create',
      doc: { summary: 'Create a machine access principal (then register its public keys as credentials)', tags, permission: WRITE, responses: { 201: 'admin.principal' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const b = req.data as { displayName: string; description?: string | null; principalType: string; tokenTtlSeconds: number; permissions: string[]; tenantScopes?: TenantScope[] };
        const scopes = b.tenantScopes ?? [{ scope_mode: 'none', tenant_id: null }];
        checkScopes(ctx, scopes);
        assertGrantable(ctx, b.permissions);
        const id = newId('mp');
        const out = await audited(deps, ctx, req, { action: 'machine_principal.create', resourceType: 'machine_principal', resourceId: id }, async (tx) => {
          const p = await createPrincipal(tx, deps.config.issuer, ctx.tenantId, {
            id, clientId: `mpc_${id.slice(3)}`, displayName: b.displayName, description: b.description ?? null, principalType: b.principalType,
            tokenTtlSeconds: b.tokenTtlSeconds, permissions: b.permissions, tenantScopes: scopes,
          });
          const v = principalView(p, []);
          return { result: v, after: v };
        });
        await deps.tokens.clients.changed(out.clientId as string);
        return { status: 201, body: out };
      },
    },
    {
      method: 'GET', path: `${BASE}/:id`, iface: 'admin',
      doc: { summary: 'Get a machine access principal with its credentials', tags, permission: READ, responses: { 200: 'admin.principal' }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const p = await getPrincipal(deps.sql, ctx.tenantId, req.params.id!);
        if (!p) throw notFound();
        return { body: principalView(p, await credentialsOf(deps.sql, ctx.tenantId, [p.id])) };
      },
    },
    {
      method: 'PUT', path: `${BASE}/:id`, iface: 'admin', body: 'json', bodySchema: 'admin.principal-update',
      doc: { summary: 'Update a principal: the fields given replace the stored ones (status active or disabled)', tags, permission: WRITE, responses: { 200: 'admin.principal' }, errors: [401, 403, 404, 409, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const b = req.data as PrincipalPatch;
        checkScopes(ctx, b.tenantScopes);
        if (b.permissions) assertGrantable(ctx, b.permissions);
        const id = req.params.id!;
        const out = await audited(deps, ctx, req, { action: 'machine_principal.update', resourceType: 'machine_principal', resourceId: id }, async (tx) => {
          const cur = await load(tx, ctx, id);
          await updatePrincipal(tx, ctx.tenantId, id, b);
          const v = await view(tx, ctx.tenantId, id);
          return { result: { ...v, wasActive: cur.status === 'active' }, before: principalView(cur, []), after: v.view };
        });
        await deps.tokens.clients.changed(out.row.client_id);
        if (out.wasActive && out.row.status !== 'active') await deps.tokens.revocations.revokeBefore(ctx.tenantId, 'client', out.row.client_id, Date.now(), MAX_ACCESS_TTL);
        return { body: out.view };
      },
    },
    statusRoute('disable'),
    statusRoute('enable'),
    {
      method: 'DELETE', path: `${BASE}/:id`, iface: 'admin',
      doc: { summary: 'Delete a principal: status deleted, credentials revoked, tokens revoked (it stays listable with status=deleted)', tags, permission: WRITE, responses: { 204: null }, errors: [401, 403, 404, 409], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const id = req.params.id!;
        const clientId = await audited(deps, ctx, req, { action: 'machine_principal.delete', resourceType: 'machine_principal', resourceId: id, severity: 'warn' }, async (tx) => {
          const cur = await load(tx, ctx, id);
          await revokeAllCredentials(tx, ctx.tenantId, id);
          await updatePrincipal(tx, ctx.tenantId, id, { status: 'deleted' });
          await resyncPrincipal(tx, ctx.tenantId, id);
          return { result: cur.client_id, before: principalView(cur, []) };
        });
        await deps.tokens.clients.changed(clientId);
        await deps.tokens.revocations.revokeBefore(ctx.tenantId, 'client', clientId, Date.now(), MAX_ACCESS_TTL);
        return { status: 204 };
      },
    },
    {
      method: 'POST', path: `${BASE}/:id/credentials`, iface: 'admin', body: 'json', bodySchema: 'admin.principal-credential-create',
      doc: { summary: 'Register a public key (JWK; ES256, PS256 or RS256) the principal signs private_key_jwt assertions with', tags, permission: WRITE, responses: { 201: 'admin.principal-credential' }, errors: [401, 403, 404, 409, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const id = req.params.id!;
        const input = credentialInput(req.data as CredentialBody);
        const out = await audited(deps, ctx, req, { action: 'machine_principal.credential_create', resourceType: 'machine_principal', resourceId: id }, async (tx) => {
          const p = await load(tx, ctx, id);
          const c = await insertCredential(tx, ctx.tenantId, id, input);
          if (!c) throw new Conflict('conflict', 'The principal already has a credential with this kid.');
          await resyncPrincipal(tx, ctx.tenantId, id);
          return { result: { c, clientId: p.client_id }, after: credentialView(c), metadata: { credential_id: c.id, kid: c.kid } };
        });
        await deps.tokens.clients.changed(out.clientId);
        return { status: 201, body: credentialView(out.c) };
      },
    },
    credentialAction('rotate'),
    credentialAction('revoke'),
  ];
}
