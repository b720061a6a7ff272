import type { Client } from '../../clients/model.js';
import type { Deps } from '../../deps.js';
import { Forbidden } from '../../errors.js';
import type { JwtPayload } from '../../tokens/jwt.js';

/**
 * Step 3: the client the token was issued to is still active. It comes before the revocation check:
 * disabling a client also revokes its tokens, and the caller should learn the cause (client_disabled)
 * rather than the consequence (token_revoked).
 */
export async function checkClient(deps: Deps, p: JwtPayload): Promise<Client> {
  const client = await deps.tokens.clients.get(String(p.client_id));
  if (!client || client.status !== 'active') throw new Forbidden('client_disabled', 'The client this token was issued to is disabled.');
  return client;
}
