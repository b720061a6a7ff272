import type { Deps } from '../deps.js';
import { Conflict, NotFound, ValidationError } from '../errors.js';
import type { Route } from '../http/types.js';
import { newInitialAccessToken, tokenView } from '../registration/initial-access-tokens.js';
import { effectivePolicy, policyView } from '../registration/policy.js';
import { issuerKeyProblems } from '../registration/software-statement.js';
import { newId } from '../store/ids.js';
import type { SoftwareStatementIssuerRow } from '../store/registrations.js';
import { adminRoute, deleted, fetched, found, listed } from './route.js';

const READ = 'admin:registration:read';
const WRITE = 'admin:registration:write';
const tags = ['registration'];
const BASE = '/api/admin/registration';

const tokenNotFound = () => new NotFound('not_found', 'No such initial access token.');
const issuerNotFound = () => new NotFound('not_found', 'No such software statement issuer.');

function issuerView(i: SoftwareStatementIssuerRow): Record<string, unknown> {
  return { id: i.id, issuer: i.issuer, jwks: i.jwks, description: i.description, created_at: Number(i.created_at) };
}

/**
 * The tenant's dynamic client registration (RFC 7591, POST /register): its policy, the initial access
 * tokens that let a registration in (value shown once, stored as a keyed hash) and the issuers whose
 * software statements it trusts.
 */
export function registrationAdminRoutes(deps: Deps): Route[] {
  return [
    adminRoute(deps, {
      method: 'GET', path: `${BASE}/policy`, permission: READ, tags,
      summary: 'The tenant\'s dynamic registration policy (the defaults until changed: open registration off)', response: { 200: 'admin.registration-policy' },
      handler: async ({ ctx, store }) => ({ body: policyView(effectivePolicy(ctx.tenantId, await store.registrations.policy())) }),
    }),
    adminRoute(deps, {
      method: 'PUT', path: `${BASE}/policy`, permission: WRITE, tags, body: 'admin.registration-policy-update',
      summary: 'Change the dynamic registration policy: the fields given replace the stored ones (clients already registered keep their metadata)',
      response: { 200: 'admin.registration-policy' }, audit: { action: 'registration_policy.update', resourceType: 'registration_policy' },
      handler: async ({ ctx, body, mutate }) => {
        const row = await mutate(async (_tx, store) => {
          const cur = effectivePolicy(ctx.tenantId, await store.registrations.policy());
          const { tenant_id: _t, updated_at: _u, ...fields } = cur;
          const next = await store.registrations.savePolicy({ ...fields, ...body });
          return { result: next, resourceId: ctx.tenantId, before: policyView(cur), after: policyView(next) };
        });
        return { body: policyView(row) };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: `${BASE}/initial-access-tokens`, permission: WRITE, tags, body: 'admin.initial-access-token-create',
      summary: 'Create an initial access token for POST /register: its value is in this response only', response: { 201: 'admin.initial-access-token-created' },
      audit: { action: 'initial_access_token.create', resourceType: 'initial_access_token' },
      handler: async ({ deps, ctx, body, mutate }) => {
        const t = newInitialAccessToken(deps.tokens.secretKey);
        const row = await mutate(async (_tx, store) => {
          const r = await store.registrations.insertToken({
            id: t.id, hash: t.hash, description: body.description ?? null, createdBy: ctx.actor.id,
            expiresAt: body.expires_in ? Date.now() + body.expires_in * 1000 : null, maxUses: body.max_uses ?? null,
          });
          return { result: r, resourceId: r.id, after: tokenView(r) };
        });
        return { status: 201, body: { ...tokenView(row), token: t.value } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: `${BASE}/initial-access-tokens`, permission: READ, tags, query: 'query.admin-initial-access-token-list',
      summary: 'List initial access tokens, newest first (never their values)', response: { 200: 'admin.initial-access-token-list' },
      handler: listed((store, q) => store.registrations.listTokens(q), tokenView),
    }),
    adminRoute(deps, {
      method: 'GET', path: `${BASE}/initial-access-tokens/:id`, permission: READ, tags,
      summary: 'Get an initial access token (never its value)', response: { 200: 'admin.initial-access-token' }, errors: [404],
      handler: fetched((store, id) => store.registrations.getToken(id), tokenView, tokenNotFound),
    }),
    adminRoute(deps, {
      method: 'POST', path: `${BASE}/initial-access-tokens/:id/revoke`, permission: WRITE, tags,
      summary: 'Revoke an initial access token: registrations presenting it are refused from now on (clients it registered stay)',
      response: { 200: 'admin.initial-access-token' }, errors: [404], audit: { action: 'initial_access_token.revoke', resourceType: 'initial_access_token', severity: 'warn' },
      handler: async ({ params, mutate }) => {
        const row = await mutate(async (_tx, store) => {
          const before = found(await store.registrations.getToken(params.id!), tokenNotFound);
          const after = (await store.registrations.revokeToken(before.id))!;
          return { result: after, before: tokenView(before), after: tokenView(after) };
        });
        return { body: tokenView(row) };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: `${BASE}/software-statement-issuers`, permission: WRITE, tags, body: 'admin.software-statement-issuer-create',
      summary: 'Trust an issuer of software statements (RFC 7591 2.3) with its public keys; 409 when the issuer is already trusted',
      response: { 201: 'admin.software-statement-issuer' }, errors: [409], audit: { action: 'software_statement_issuer.create', resourceType: 'software_statement_issuer' },
      handler: async ({ body, mutate }) => {
        const problems = await issuerKeyProblems(body.jwks as { keys: Array<Record<string, unknown>> });
        if (problems.length) throw new ValidationError({ jwks: problems });
        const row = await mutate(async (_tx, store) => {
          const r = await store.registrations.insertIssuer({ id: newId('ssi'), issuer: body.issuer, jwks: body.jwks as SoftwareStatementIssuerRow['jwks'], description: body.description ?? null });
          if (!r) throw new Conflict('conflict', 'This issuer is already trusted.');
          return { result: r, resourceId: r.id, after: issuerView(r) };
        });
        return { status: 201, body: issuerView(row) };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: `${BASE}/software-statement-issuers`, permission: READ, tags,
      summary: 'List the trusted software statement issuers', response: { 200: 'admin.software-statement-issuer-list' },
      handler: async ({ store }) => ({ body: { items: (await store.registrations.listIssuers()).map(issuerView) } }),
    }),
    adminRoute(deps, {
      method: 'GET', path: `${BASE}/software-statement-issuers/:id`, permission: READ, tags,
      summary: 'Get a trusted software statement issuer', response: { 200: 'admin.software-statement-issuer' }, errors: [404],
      handler: fetched((store, id) => store.registrations.getIssuer(id), issuerView, issuerNotFound),
    }),
    adminRoute(deps, {
      method: 'DELETE', path: `${BASE}/software-statement-issuers/:id`, permission: WRITE, tags,
      summary: 'Stop trusting a software statement issuer (clients it vouched for stay)', response: { 204: null }, errors: [404],
      audit: { action: 'software_statement_issuer.delete', resourceType: 'software_statement_issuer', severity: 'warn' },
      handler: deleted((store, id) => store.registrations.deleteIssuer(id), issuerView, issuerNotFound),
    }),
  ];
}
