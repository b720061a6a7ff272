import type { Redis } from 'ioredis';
import { DpopUnauthorized, OAuthError } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import type { TenantSettingsCache } from '../tenants/settings-cache.js';
import type { JwtPayload } from '../tokens/jwt.js';
import { DpopNonces } from './nonce.js';
import { DPOP_ALGS, verifyProof } from './proof.js';
import { proofFresh, spendProofJti } from './replay.js';

/** `DPoP <token>` (RFC 9449 7.1), scheme in any case, as Bearer's b64token. */
const DPOP_SCHEME = /^dpop +([A-Za-z0-9._~+/-]+=*) *$/i;

/** The access token of an `Authorization: DPoP` header, or undefined. */
export function dpopToken(req: HttpRequest): string | undefined {
  const h = req.headers.authorization;
  return h === undefined ? undefined : DPOP_SCHEME.exec(h)?.[1];
}

const refuse = (code: 'invalid_dpop_proof' | 'invalid_token' | 'use_dpop_nonce', why: string, nonce?: string) => new DpopUnauthorized(code, why, DPOP_ALGS, nonce);

/**
 * Checks the sender constraint of a verified access token presented to one of our resources
 * (/userinfo, /api/user/consents): a DPoP-bound token (cnf.jkt) only under the DPoP scheme with a fresh
 * proof of its key for this very request (htm, htu, ath); a token under the DPoP scheme must be bound.
 * Refusals are 401 with the DPoP challenge (RFC 9449 7.1).
 */
export class ResourceDpop {
  private readonly nonces: DpopNonces;

  constructor(private readonly redis: Redis, secret: Buffer, private readonly issuer: string, private readonly settings: TenantSettingsCache) {
    this.nonces = new DpopNonces(secret);
  }

  async check(req: HttpRequest, token: string, scheme: 'Bearer' | 'DPoP', p: JwtPayload): Promise<void> {
    const jkt = (p.cnf as { jkt?: unknown } | undefined)?.jkt;
    if (scheme === 'Bearer') {
      if (jkt !== undefined) throw refuse('invalid_token', 'The access token is DPoP-bound: present it with the DPoP scheme and a proof.');
      return;
    }
    if (typeof jkt !== 'string') throw refuse('invalid_token', 'The access token is not DPoP-bound: present it as a Bearer token.');
    const proof = req.headers.dpop;
    if (proof === undefined) throw refuse('invalid_dpop_proof', 'A DPoP proof is required with the DPoP scheme.');
    let v;
    try {
      v = await verifyProof(proof, { htm: req.method, htu: `${this.issuer}${req.path}`, accessToken: token });
    } catch (err) {
      if (err instanceof OAuthError) throw refuse('invalid_dpop_proof', err.message);
      throw err;
    }
    if (v.jkt !== jkt) throw refuse('invalid_dpop_proof', 'The DPoP proof is signed by another key than the token is bound to.');
    const tenant = String(p.tenant ?? '');
    if ((await this.settings.get(tenant)).settings.dpop_nonce === true && !this.nonces.valid(tenant, v.nonce)) {
      throw refuse('use_dpop_nonce', 'Send a DPoP proof with the server-provided nonce.', this.nonces.current(tenant));
    }
    if (!(await proofFresh(spendProofJti(this.redis, `rs:${jkt}`, v.jti)))) throw refuse('invalid_dpop_proof', 'The DPoP proof was already used.');
  }
}
