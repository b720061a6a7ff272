import { randomBytes } from 'node:crypto';
import { adminAudience, ADMIN_SCOPE } from '../../src/admin/context.js';
import { api, type Api } from '../admin/helpers.js';
import type { TestServer } from '../helpers/server.js';
import { adminToken } from '../helpers/tokens.js';

export const ALL = ['admin:approvals:read', 'admin:approvals:write', 'admin:approvals:approve', 'admin:approvals:grant:issue'];

export interface Person { id: string; email: string; token: string; call: Api }

/** A user of the tenant with an admin token (as the admin console's login would issue it) holding `permissions`. */
export async function person(srv: TestServer, tenantId: string, label: string, permissions: string[] = ALL, opts: { authTime?: number } = {}): Promise<Person> {
  await adminToken(srv, { tenantId, permissions: [] }); // makes sure the tenant's admin client exists
  const email = `${label}-${randomBytes(4).toString('hex')}@example.test`;
  const u = (await srv.deps.store.forTenant(tenantId).users.insert({ email, name: label, emailVerified: true }))!;
  const clientId = `${tenantId}-test-admin`;
  const token = (await srv.deps.tokens.accessTokens.issue({
    tenant: tenantId, sub: u.id, clientId, aud: adminAudience(srv.config.issuer), scope: ADMIN_SCOPE, ttlSeconds: 600,
    extra: { permissions, tenant_scopes: [{ scope_mode: 'none', tenant_id: null }], email, name: label, auth_time: opts.authTime ?? Math.floor(Date.now() / 1000) },
  })).token;
  return { id: u.id, email, token, call: api(srv, token) };
}

/** A request body with the given steps. */
export function requestBody(audience: string, approvals: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    request_surface: 'support_console', requested_action: 'read', target_subject_type: 'user', target_subject_id: 'usr_customer_42',
    resource_class: 'user_profile', reason_code: 'customer_ticket', reason_note: 'Customer cannot sign in',
    ticket_reference: { system: 'zendesk', id: 'ZD-1234' }, reference: 'case 77', policy_preset: 'support_case_default', audience, approvals, ...extra,
  };
}

export const step = (key: string, subjectId: string | null, method = 'portal_confirm') =>
  ({ step_key: key, side: 'admin_operator', subject_type: 'admin_user', subject_id: subjectId, method });

/** A software passkey (ES256) registered for a user directly in the store, and a signer of WebAuthn assertions. */
export async function softPasskey(srv: TestServer, tenantId: string, userId: string) {
  const { generateKeyPairSync, createHash, sign } = await import('node:crypto');
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const x = Buffer.from(jwk.x!, 'base64url');
  const y = Buffer.from(jwk.y!, 'base64url');
  // COSE_Key {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y} in CBOR.
  const cose = Buffer.concat([Buffer.from([0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]), x, Buffer.from([0x22, 0x58, 0x20]), y]);
  const credentialId = randomBytes(16).toString('base64url');
  await srv.deps.store.forTenant(tenantId).passkeys.insert({
    userId, credentialId, publicKey: new Uint8Array(cose), counter: 0, transports: ['internal'], backupEligible: false, backedUp: false, aaguid: null, deviceName: 'test key',
  });
  let counter = 0;
  return {
    credentialId,
    /** The PublicKeyCredential JSON a browser would send for these request options. */
    assert(options: { challenge: string; rpId?: string }) {
      const rpId = options.rpId ?? srv.config.webauthnRpId;
      const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin: srv.config.webauthnOrigins[0], crossOrigin: false }));
      const count = Buffer.alloc(4);
      count.writeUInt32BE(++counter);
      const authenticatorData = Buffer.concat([createHash('sha256').update(rpId).digest(), Buffer.from([0x05]), count]);
      const signature = sign('sha256', Buffer.concat([authenticatorData, createHash('sha256').update(clientDataJSON).digest()]), privateKey);
      return {
        id: credentialId, rawId: credentialId, type: 'public-key', clientExtensionResults: {},
        response: { clientDataJSON: clientDataJSON.toString('base64url'), authenticatorData: authenticatorData.toString('base64url'), signature: signature.toString('base64url'), userHandle: Buffer.from(userId).toString('base64url') },
      };
    },
  };
}
