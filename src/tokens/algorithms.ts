/**
 * The JWS algorithms svc signs its own tokens with, and their names. One key pins one algorithm
 * (RFC 8725 3.1), except that an Ed25519 key answers to both of its names: `EdDSA` (RFC 8037) and the
 * fully specified `Ed25519` that RFC 9864 registers in its place (docs/decisions.md).
 */
export const SIGNING_ALGS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

/** A name a JWS header, a client's metadata or discovery may use for one of our key algorithms. */
export type AlgName = SigningAlg | 'Ed25519';

const NAMES: Readonly<Record<SigningAlg, readonly AlgName[]>> = {
  RS256: ['RS256'], PS256: ['PS256'], ES256: ['ES256'], EdDSA: ['EdDSA', 'Ed25519'],
};

/** Every name under which a key of this algorithm is advertised and accepted. */
export function namesOf(alg: SigningAlg): readonly AlgName[] {
  return NAMES[alg];
}

/** The key algorithm a JWS alg name denotes, or undefined for a name svc does not sign with. */
export function keyAlgOf(name: unknown): SigningAlg | undefined {
  switch (name) {
    case 'RS256': case 'PS256': case 'ES256': case 'EdDSA': return name;
    case 'Ed25519': return 'EdDSA';
    default: return undefined;
  }
}

/** Whether a header's alg is a name of the key's pinned algorithm (never "none", never HS*, never another family). */
export function headerAlgFits(headerAlg: unknown, keyAlg: SigningAlg): boolean {
  return headerAlg === keyAlg || (keyAlg === 'EdDSA' && headerAlg === 'Ed25519');
}

/** Discovery's list for a set of key algorithms, each under all its names. */
export function advertised(algs: readonly SigningAlg[]): AlgName[] {
  return algs.flatMap((a) => NAMES[a]);
}
