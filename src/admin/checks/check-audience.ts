import { adminAudience } from '../../admin-access.js';
import { Unauthorized } from '../../errors.js';
import type { JwtPayload } from '../../tokens/jwt.js';

/** Step 2: the token was issued for the administration interface (401 otherwise). */
export function checkAudience(p: JwtPayload, issuer: string): void {
  const aud = Array.isArray(p.aud) ? p.aud : [p.aud];
  if (!aud.includes(adminAudience(issuer))) throw new Unauthorized('unauthorized', 'The access token is not meant for the administration interface.');
}
