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
