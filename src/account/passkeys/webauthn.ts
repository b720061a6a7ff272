import {
  generateAuthenticationOptions, generateRegistrationOptions, verifyAuthenticationResponse, verifyRegistrationResponse,
  type AuthenticationResponseJSON, type PublicKeyCredentialCreationOptionsJSON, type PublicKeyCredentialRequestOptionsJSON, type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { Redis } from 'ioredis';
import type { Config } from '../../config.js';
import { AppError, ServiceUnavailable } from '../../errors.js';
import { redisKeys } from '../../store/redis-keys.js';
import type { NewPasskey, PasskeyRow } from '../../store/passkeys.js';
import { normalizeAaguid } from './providers.js';

/** Seconds a WebAuthn challenge can be answered. */
export const CHALLENGE_TTL_SECONDS = 300;

/** What a challenge was issued for; it is used once (GETDEL) and only for that purpose. */
export type ChallengeFor =
  | { kind: 'register'; tenantId: string; userId: string }
  | { kind: 'login'; tenantId: string; interaction: string }
  | { kind: 'reauth'; tenantId: string; userId: string }
  | { kind: 'approval'; tenantId: string; userId: string; artifactId: string };

/** A refused ceremony: the library's reason stays in the log, the client gets a plain 400. */
export class PasskeyRefused extends AppError {
  constructor(readonly reason: string, description = 'The passkey could not be verified. Try again.') {
    super(400, 'invalid_request', description, { details: { passkey: [reason] } });
  }
}

export interface RelyingParty { rpId: string; rpName: string; origins: string[] }

export function relyingParty(config: Config): RelyingParty {
  return { rpId: config.webauthnRpId, rpName: new URL(config.issuer).host, origins: [...config.webauthnOrigins] };
}

async function saveChallenge(redis: Redis, challenge: string, purpose: ChallengeFor): Promise<void> {
  try { await redis.set(redisKeys.webauthnChallenge(challenge), JSON.stringify(purpose), 'EX', CHALLENGE_TTL_SECONDS); } catch (err) {
    throw new ServiceUnavailable('The passkey ceremony could not be started; retry shortly.', 1, err);
  }
}

/** Takes a challenge once; true when it was issued for exactly this purpose. */
function challengeTaker(redis: Redis, expected: ChallengeFor): (challenge: string) => Promise<boolean> {
  return async (challenge) => {
    if (!/^[A-Za-z0-9_-]{16,128}$/.test(challenge)) return false;
    const raw = await redis.getdel(redisKeys.webauthnChallenge(challenge)).catch((err) => { throw new ServiceUnavailable('Passkeys cannot be checked right now.', 1, err); });
    if (!raw) return false;
    const got = JSON.parse(raw) as Record<string, string>;
    return Object.entries(expected).every(([k, v]) => got[k] === v) && Object.keys(got).length === Object.keys(expected).length;
  };
}

/** Registration options for a signed-in user: a discoverable credential with user verification, none already held. */
export async function registrationOptions(redis: Redis, rp: RelyingParty, a: { tenantId: string; userId: string; email: string; existing: PasskeyRow[] }): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const options = await generateRegistrationOptions({
    rpName: rp.rpName, rpID: rp.rpId, userName: a.email, userDisplayName: a.email, userID: new TextEncoder().encode(a.userId),
    attestationType: 'none', timeout: CHALLENGE_TTL_SECONDS * 1000,
    excludeCredentials: a.existing.map((p) => ({ id: p.credential_id, transports: p.transports })),
    authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
  });
  await saveChallenge(redis, options.challenge, { kind: 'register', tenantId: a.tenantId, userId: a.userId });
  return options;
}

/** Verifies a registration response (the library checks challenge, origin, RP id, UV and the attestation). */
export async function verifyRegistration(redis: Redis, rp: RelyingParty, a: { tenantId: string; userId: string; response: RegistrationResponseJSON }): Promise<Omit<NewPasskey, 'deviceName'>> {
  let out;
  try {
    out = await verifyRegistrationResponse({
      response: a.response, expectedChallenge: challengeTaker(redis, { kind: 'register', tenantId: a.tenantId, userId: a.userId }),
      expectedOrigin: rp.origins, expectedRPID: rp.rpId, requireUserVerification: true,
    });
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new PasskeyRefused((err as Error).message.slice(0, 200));
  }
  if (!out.verified) throw new PasskeyRefused('not verified');
  const info = out.registrationInfo;
  return {
    userId: a.userId, credentialId: info.credential.id, publicKey: info.credential.publicKey, counter: info.credential.counter,
    transports: (info.credential.transports ?? a.response.response.transports ?? []).filter((t) => typeof t === 'string').slice(0, 8),
    backupEligible: info.credentialDeviceType === 'multiDevice', backedUp: info.credentialBackedUp, aaguid: normalizeAaguid(info.aaguid),
  };
}

/** Options for a sign-in with any discoverable credential of the RP (no allow list: the passkey names the user). */
export async function authenticationOptions(redis: Redis, rp: RelyingParty, purpose: ChallengeFor, allow: PasskeyRow[] = []): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const options = await generateAuthenticationOptions({
    rpID: rp.rpId, userVerification: 'required', timeout: CHALLENGE_TTL_SECONDS * 1000,
    allowCredentials: allow.map((p) => ({ id: p.credential_id, transports: p.transports })),
  });
  await saveChallenge(redis, options.challenge, purpose);
  return options;
}

export type AssertionOutcome = { ok: true; newCounter: number; backedUp: boolean } | { ok: false; reason: 'counter_regression' | 'invalid' | 'user_mismatch'; message: string };

/**
 * Verifies an assertion against the stored credential. The user handle, when sent, must name the
 * credential's owner. A sign counter that did not move forward is reported apart: it suggests a cloned
 * authenticator.
 */
export async function verifyAssertion(redis: Redis, rp: RelyingParty, purpose: ChallengeFor, response: AuthenticationResponseJSON, passkey: PasskeyRow): Promise<AssertionOutcome> {
  const handle = response.response.userHandle;
  if (handle !== undefined && handle !== null && handle !== Buffer.from(passkey.user_id).toString('base64url')) {
    return { ok: false, reason: 'user_mismatch', message: 'user handle does not match the credential owner' };
  }
  try {
    const out = await verifyAuthenticationResponse({
      response, expectedChallenge: challengeTaker(redis, purpose), expectedOrigin: rp.origins, expectedRPID: rp.rpId,
      credential: { id: passkey.credential_id, publicKey: new Uint8Array(passkey.public_key), counter: passkey.counter, transports: passkey.transports },
      requireUserVerification: true,
    });
    if (!out.verified) return { ok: false, reason: 'invalid', message: 'not verified' };
    return { ok: true, newCounter: out.authenticationInfo.newCounter, backedUp: out.authenticationInfo.credentialBackedUp };
  } catch (err) {
    if (err instanceof AppError) throw err;
    const message = (err as Error).message.slice(0, 200);
    // The library's only signal for a counter that did not increase is this error text.
    return { ok: false, reason: /counter value/i.test(message) ? 'counter_regression' : 'invalid', message };
  }
}
