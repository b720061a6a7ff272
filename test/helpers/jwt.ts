import { SignJWT, type JWTHeaderParameters, type JWTPayload } from 'jose';

/** Changes one character in the middle of a JWT's signature: same shape, wrong signature. */
export function tamperSignature(jwt: string): string {
  const i = jwt.lastIndexOf('.') + 10;
  const c = jwt[i] === 'A' ? 'B' : 'A';
  return jwt.slice(0, i) + c + jwt.slice(i + 1);
}

export function claims(jwt: string): any {
  return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));
}

export function header(jwt: string): any {
  return JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString('utf8'));
}

/** Mints a JWS-signed JWT with jose (the header is taken as given; jose refuses what it cannot sign, e.g. unknown crit). */
export async function mintJwt(key: Parameters<SignJWT['sign']>[0], header: JWTHeaderParameters, claims: JWTPayload): Promise<string> {
  return new SignJWT(claims).setProtectedHeader(header).sign(key);
}
