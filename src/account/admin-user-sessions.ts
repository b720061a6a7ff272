import { revokeConsent } from './revoke-consent.js';
import { consentView } from './consents.js';
import type { Deps } from '../deps.js';
import { NotFound } from '../errors.js';
import type { Route } from '../http/types.js';
import type { TenantStore } from '../store/index.js';
import { adminRoute, found } from '../admin/route.js';
import { userNotFound } from '../admin/users.js';
import { listUserSessions, revokeUserSession } from '../login/user-session-index.js';

const READ = 'admin:users:read';
const WRITE = 'admin:users:write';
const tags = ['users'];
// Access tokens live at most a day, so a revocation mark kept that long outlives every one of them.
const MAX_ACCESS_TTL = 86_400;

const sessionNotFound = () => new NotFound('not_found', 'No such session of this user.');
const consentNotFound = () => new NotFound('not_found', 'No such consent of this user.');

async function mustUser(store: TenantStore, id: string): Promise<void> {
  found(await store.users.get(id), userNotFound);
}

/**
 * Mounted by src/app.ts beside the account routes (src/admin must not import src/account, which imports it).
 * A user's sessions at applications (their live refresh token families) and consents, as operators see
 * them: listed, and ended or withdrawn with the same effect as the user's own revocation (the family's
 * access tokens are revoked with it; a withdrawn consent cuts the client's tokens for the user).
 */
export function userSessionRoutes(deps: Deps): Route[] {
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/users/:id/sessions', permission: READ, tags,
      summary: 'A user\'s sessions at applications: live refresh token families, most recently used first (at most 100)',
      response: { 200: 'admin.user-session-list' }, errors: [404],
      handler: async ({ params, store }) => {
        await mustUser(store, params.id!);
        const rows = await store.refreshTokens.liveFamilies(params.id!);
        return {
          body: {
            user_id: params.id!,
            sessions: rows.map((r) => ({ id: r.family_id, client_id: r.client_id, scope: r.scope, started_at: Number(r.started_at), last_used_at: Number(r.last_used_at), expires_at: Number(r.expires_at) })),
          },
        };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: '/api/admin/users/:id/sessions/:sessionId', permission: WRITE, tags,
      summary: 'End a user\'s session: its refresh tokens and the access tokens issued from them stop working',
      response: { 204: null }, errors: [404],
      audit: { action: 'user.session.revoke', resourceType: 'user', severity: 'warn' },
      handler: async ({ deps: d, ctx, params, mutate }) => {
        const userId = params.id!;
        const familyId = params.sessionId!;
        const jtis = await mutate(async (_tx, store) => {
          await mustUser(store, userId);
          const clientId = found(await store.refreshTokens.familyOf(userId, familyId), sessionNotFound);
          const revoked = await store.refreshTokens.revokeFamily(familyId);
          return { result: revoked, resourceId: userId, metadata: { session_id: familyId, client_id: clientId, access_tokens: revoked.length } };
        });
        // After the commit, as /revoke does: each access token of the family is marked until it would have expired.
        const until = Math.floor(Date.now() / 1000) + MAX_ACCESS_TTL;
        await Promise.all(jtis.map((j) => d.tokens.revocations.revoke(ctx.tenantId, j, until, d.trace)));
        return { status: 204 };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/users/:id/login-sessions', permission: READ, tags,
      summary: 'A user\'s login sessions at svc (the session cookie), newest sign-in first (at most 100)',
      response: { 200: 'admin.user-login-session-list' }, errors: [404],
      handler: async ({ deps, ctx, params, store }) => {
        await mustUser(store, params.id!);
        const rows = await listUserSessions(deps.redis, ctx.tenantId, params.id!);
        return { body: { user_id: params.id!, sessions: rows.map((r) => ({ id: r.id, signed_in_at: r.authTime * 1000, expires_at: r.expiresAt * 1000 })) } };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: '/api/admin/users/:id/login-sessions/:sessionId', permission: WRITE, tags,
      summary: 'End a user\'s login session: its cookie no longer signs in (tokens already issued are left alone)',
      response: { 204: null }, errors: [404],
      audit: { action: 'user.login_session.revoke', resourceType: 'user', severity: 'warn' },
      handler: async ({ deps, ctx, params, store, mutate }) => {
        const userId = params.id!;
        await mustUser(store, userId);
        if (!(await revokeUserSession(deps.redis, ctx.tenantId, userId, params.sessionId!))) throw sessionNotFound();
        // The session is gone from Redis already; the audit entry records who ended it.
        await mutate(async () => ({ result: null, resourceId: userId, metadata: { login_session_id: params.sessionId! } }));
        return { status: 204 };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/users/:id/consents', permission: READ, tags,
      summary: 'A user\'s consents to applications, newest first', response: { 200: 'login.consent-list' }, errors: [404],
      handler: async ({ params, store }) => {
        await mustUser(store, params.id!);
        const rows = await store.consents.listForUser(params.id!);
        return { body: { consents: rows.map(consentView), total: rows.length } };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: '/api/admin/users/:id/consents/:consentId', permission: WRITE, tags,
      summary: 'Withdraw a user\'s consent: the application\'s refresh and access tokens for the user stop working (user.updated)',
      response: { 204: null }, errors: [404],
      audit: { action: 'user.consent.revoke', resourceType: 'user', severity: 'warn' },
      handler: async ({ deps, ctx, params, store, mutate }) => {
        const userId = params.id!;
        await mustUser(store, userId);
        const consent = found((await store.consents.listForUser(userId)).find((c) => c.id === params.consentId), consentNotFound);
        // revokeConsent orders its own steps (tokens cut before the consent goes) in its own transaction;
        // the audit entry follows it, naming what was withdrawn.
        await revokeConsent(deps, ctx.tenantId, userId, consent.id);
        await mutate(async () => ({ result: null, resourceId: userId, before: consentView(consent), metadata: { consent_id: consent.id, client_id: consent.client_id } }));
        return { status: 204 };
      },
    }),
  ];
}
