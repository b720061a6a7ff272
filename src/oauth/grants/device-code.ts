import { GRANT } from '../../clients/model.js';
import { declareEvents } from '../../events/declare.js';
import { OAuthError } from '../../errors.js';
import { DEVICE } from '../../device/options.js';
import { pollDeviceCode, recordDeviceCodeIssued, type Poll } from '../../device/store.js';
import { required } from '../params.js';
import { issueForUser, type Grant } from './grant.js';
import { issueOnce, revokeIssued } from './revoke-issued.js';

/** A replayed device code is a security alert (its first tokens are revoked), as a replayed authorization code is. */
const deviceGrantEvents = declareEvents(['security.alert']);

/** The answer to every poll that does not get tokens (RFC 8628 3.5; RFC 6749 5.2 for the rest). */
const REFUSALS: Record<Exclude<Poll['kind'], 'approved'>, () => OAuthError> = {
  pending: () => new OAuthError('authorization_pending', 'The user has not yet approved this device: poll again after the interval.'),
  slow_down: () => new OAuthError('slow_down', `Polling too fast: the interval is now ${DEVICE.slowDownStepSeconds} seconds longer.`),
  // RFC 6749's code, answered with 400 as every RFC 8628 3.5 error (not the 403 of a page).
  denied: () => new OAuthError('access_denied', 'The user denied the authorization.', 400),
  expired: () => new OAuthError('expired_token', 'The device code has expired: start a new device authorization.'),
  used: () => new OAuthError('invalid_grant', 'The device code was already used.'),
  unknown: () => new OAuthError('invalid_grant', 'The device code is invalid.'),
  // Another client's code (of this or another tenant) is as unknown to this client as a made-up one.
  other_client: () => new OAuthError('invalid_grant', 'The device code is invalid.'),
};

/**
 * RFC 8628 3.4: the device polls with its device code until the person has approved or denied it at
 * /device. An approved code is spent by the poll that sees it (one script in src/device/store.ts),
 * which gets the same tokens as an authorization code would (issueForUser: bound to the poll's DPoP
 * proof, if any). A used code presented again by its client is invalid_grant and revokes the tokens
 * its first poll got (RFC 6749 4.1.2 by analogy, RFC 9700 4.5; docs/decisions.md).
 */
export const deviceCode: Grant = {
  type: GRANT.deviceCode,
  params: ['device_code', 'audience', 'resource'],
  async handle(deps, client, form, _ahead, binding) {
    const poll = await pollDeviceCode(deps.redis, required(form, 'device_code'), client.clientId);
    if (poll.kind === 'used') {
      // The script answers 'used' only to the code's client id; the tenant must be that client's too.
      if (poll.tenantId !== client.tenantId) throw REFUSALS.other_client();
      if (poll.issued) await revokeIssued(deps, poll.tenantId, poll.issued);
      deps.log.warn({ client_id: client.clientId }, 'device code replay: tokens from its first use revoked');
      await deps.sql.begin((tx) => deviceGrantEvents.emit(tx, poll.tenantId, 'security.alert', { user_id: poll.userId, client_id: client.clientId, reason: 'device_code_replay' }));
      throw REFUSALS.used();
    }
    if (poll.kind !== 'approved') throw REFUSALS[poll.kind]();
    if (poll.tenantId !== client.tenantId) throw REFUSALS.other_client();
    const { user } = poll;
    // Revoked again when a replay arrived while they were being issued, or the user was locked since the approval.
    const { body } = await issueOnce(deps, client.tenantId, user,
      () => issueForUser(deps, client, { userId: user.userId, email: user.email, authTime: user.authTime, scope: poll.scope }, form, binding),
      (issued) => recordDeviceCodeIssued(deps.redis, poll.codeHash, issued), REFUSALS.used);
    return body;
  },
};
