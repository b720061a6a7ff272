import type { Redis } from 'ioredis';
import type { Client } from '../clients/model.js';
import { OAuthError, ServiceUnavailable, UseDpopNonce } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import { redisKeys } from '../store/redis-keys.js';
import type { TenantProfile } from '../tenants/settings-cache.js';
import { sha256b64url } from '../tokens/secrets.js';
import { requirementsFor } from '../tenants/security-profile.js';
import { DpopNonces } from './nonce.js';
import { peekProof, PROOF_MAX_AGE, PROOF_MAX_SKEW, verifyProof } from './proof.js';

/** A jti is remembered as long as a proof carrying it can be accepted, and a second more. */
const REPLAY_TTL = PROOF_MAX_AGE + PROOF_MAX_SKEW + 1;

/** A proof presented at /token (or /par), its replay write already on its way to Redis. */
export interface PendingProof {
  proof: string;
  /** The client the replay record was written for (the one the request claims). */
  scope: string;
  /** SET NX's answer: 'OK' for a first use, null for a replay; undefined when the proof did not decode. */
  fresh: Promise<'OK' | null> | undefined;
}

/**
 * DPoP at a client-authenticated endpoint (RFC 9449 5): start() runs in the request's first tick, so the
 * jti's SET NX leaves in the same write as the request's other Redis read (ioredis auto-pipelining);
 * finish() verifies the proof once the client is known and returns the key to bind tokens to.
 */
export class DpopAtEndpoint {
  private readonly nonces: DpopNonces;

  constructor(private readonly redis: Redis, secret: Buffer, private readonly htu: string, private readonly htm = 'POST') {
    this.nonces = new DpopNonces(secret);
  }

  /** `claimant` names the client the request claims; only asked when there is a proof. */
  start(req: HttpRequest, claimant: () => string | undefined): PendingProof | undefined {
    const proof = req.headers.dpop;
    if (proof === undefined) return undefined;
    const scope = claimant() ?? '';
    const peek = peekProof(proof);
    const fresh = peek === undefined ? undefined
      : this.redis.set(redisKeys.dpopJti(scope, sha256b64url(peek.jti)), '1', 'EX', REPLAY_TTL, 'NX') as Promise<'OK' | null>;
    fresh?.catch(() => {}); // awaited in finish(), unless the request fails earlier
    return { proof, scope, fresh };
  }

  /**
   * The proof's key, or undefined without a proof (refused when the client or its tenant requires DPoP).
   * Throws invalid_dpop_proof for a bad or replayed proof, use_dpop_nonce when the tenant asks for nonces.
   */
  async finish(pending: PendingProof | undefined, client: Client, tenant: TenantProfile, required = requirementsFor(client, tenant.settings).dpop): Promise<{ jkt: string } | undefined> {
    if (!pending) {
      if (required) throw new OAuthError('invalid_dpop_proof', 'This client must send a DPoP proof (RFC 9449).');
      return undefined;
    }
    const v = await verifyProof(pending.proof, { htm: this.htm, htu: this.htu });
    if (tenant.settings.dpop_nonce === true && !this.nonces.valid(client.tenantId, v.nonce)) throw new UseDpopNonce(this.nonces.current(client.tenantId));
    // The replay record was written under the client the request claimed; a proof is that client's only.
    if (pending.scope !== client.clientId || pending.fresh === undefined) throw new OAuthError('invalid_dpop_proof', 'The DPoP proof is invalid.');
    let fresh: 'OK' | null;
    // Fail closed: a proof whose first use cannot be recorded is not accepted.
    try { fresh = await pending.fresh; } catch (err) { throw new ServiceUnavailable('DPoP proofs cannot be checked right now.', 1, err); }
    if (fresh === null) throw new OAuthError('invalid_dpop_proof', 'The DPoP proof was already used.');
    return { jkt: v.jkt };
  }

  /** The nonce to offer with a successful answer when the tenant requires nonces (RFC 9449 8.2). */
  nonceFor(client: Client, tenant: TenantProfile): string | undefined {
    return tenant.settings.dpop_nonce === true ? this.nonces.current(client.tenantId) : undefined;
  }
}
