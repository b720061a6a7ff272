import type { Context } from '@opentelemetry/api';
import type { Config } from '../config.js';
import { newJti } from './jti.js';
import { checkClaims, checkHeader, decodeJwt, JwtError, keyOf, TOKEN_TYPES, verifyJwt, type JwtPayload } from './jwt.js';
import type { KeyRing } from './keys.js';
import type { ShardingCache } from './sharding.js';
import type { Signer } from './signer.js';
import { withStatusIdx, type StatusLists } from './status-list.js';
import { VerifiedTokens } from './verified-tokens.js';

export interface AccessTokenInput {
  tenant: string;
  sub: string;
  clientId: string;
  aud: string | string[];
  scope: string;
  ttlSeconds: number;
  /** Additional claims: act, resource, permissions, tenant_scopes, auth_time. */
  extra?: Record<string, unknown>;
}

export interface IssuedToken { token: string; jti: string; iat: number; exp: number }

/** Mints and verifies RFC 9068 access tokens. */
export class AccessTokens {
  /** What every access token is checked against; built once, not per verification. */
  private readonly opts: { typ: string; issuer: string; expiryTolerance: number };
  /** Set where tenants may turn token status lists on (src/services.ts); absent, no token carries a status. */
  statusLists: StatusLists | undefined;
  /** Signatures already verified by this process (verifyAsync only: the hot paths). */
  readonly verified = new VerifiedTokens();

  constructor(private readonly config: Config, private readonly ring: KeyRing, private readonly signer: Signer, private readonly sharding: ShardingCache) {
    // Our own tokens expire at exp, wherever they are presented (introspection, exchange, Bearer APIs).
    this.opts = { typ: TOKEN_TYPES.access, issuer: config.issuer, expiryTolerance: 0 };
  }

  /** `trace`: a sampled request's context (deps.trace), the parent of its signing span. */
  async issue(t: AccessTokenInput, trace?: Context): Promise<IssuedToken> {
    const iat = Math.floor(Date.now() / 1000);
    const exp = iat + t.ttlSeconds;
    const g = this.sharding.current(t.clientId);
    let jti = newJti(g.generation, this.config.region, g.shardCount);
    // The tenant's setting is cached: a tenant without status lists costs a Map lookup, no await.
    const lists = this.statusLists;
    const on = lists?.enabled(t.tenant);
    let status: unknown;
    if (on === true || (on instanceof Promise && await on)) {
      const idx = await lists!.allocate(t.tenant);
      jti = withStatusIdx(jti, idx);
      status = lists!.claim(t.tenant, idx);
    }
    const payload: JwtPayload = {
      iss: this.config.issuer, sub: t.sub, aud: t.aud, exp, iat, jti, client_id: t.clientId, scope: t.scope, tenant: t.tenant, ...t.extra,
    };
    if (status !== undefined) payload.status = status;
    const token = await this.signer.sign(t.tenant, { typ: TOKEN_TYPES.access }, payload, undefined, trace);
    return { token, jti, iat, exp };
  }

  /** Signature, type, issuer and time checks, inline; revocation is the caller's next step. Throws JwtError. */
  verify(token: string): JwtPayload {
    return verifyJwt(this.ring, token, this.opts).payload;
  }

  /**
   * The same checks, with the signature verified in the crypto pool when CRYPTO_VERIFY=pool (hot paths).
   * `claims`: the payload of this same token string, already decoded by its read-ahead, so it is decoded once.
   */
  async verifyAsync(token: string, claims?: JwtPayload, trace?: Context): Promise<JwtPayload> {
    const d = decodeJwt(token, claims);
    const key = checkHeader(d, keyOf(this.ring, d));
    // Claim errors other than expiry end the check before the costly signature verification; expiry is
    // reported only once the signature holds, so a tampered expired token is answered as a bad signature.
    let claimsError: unknown;
    try { checkClaims(d, this.opts); } catch (err) { claimsError = err; }
    if (claimsError instanceof JwtError && claimsError.reason !== 'expired') throw claimsError;
    if (!this.verified.has(token, key)) {
      if (!(await this.signer.verify(key, d.signingInput, d.signature, trace))) throw new JwtError('signature');
      this.verified.add(token, key);
    }
    if (claimsError) throw claimsError;
    return d.payload;
  }
}
