import type { Redis } from 'ioredis';
import type { Client } from '../clients/model.js';
import { OAuthError, UseDpopNonce } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import type { TenantProfile } from '../tenants/settings-cache.js';
import { requirementsFor } from '../tenants/security-profile.js';
import { DpopNonces } from './nonce.js';
import { peekProof, verifyProof } from './proof.js';
import { proofFresh, spendProofJti } from './replay.js';

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
    const fresh = peek === undefined ? undefined : spendProofJti(this.redis, scope, peek.jti);
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
    if (!(await proofFresh(pending.fresh))) throw new OAuthError('invalid_dpop_proof', 'The DPoP proof was already used.');
    return { jkt: v.jkt };
  }

  /** The nonce to offer with a successful answer when the tenant requires nonces (RFC 9449 8.2). */
  nonceFor(client: Client, tenant: TenantProfile): string | undefined {
    return tenant.settings.dpop_nonce === true ? this.nonces.current(client.tenantId) : undefined;
  }
}
