import type { Client } from '../../clients/model.js';
import type { Deps } from '../../deps.js';
import { PageError, param, type Query } from './types.js';

/** Step 1: the client exists and is active. Failures are shown as a page: there is no trusted place to redirect to. */
export async function checkClient(deps: Deps, q: Query): Promise<Client> {
  const clientId = param(q, 'client_id', (m) => new PageError(m));
  if (!clientId) throw new PageError('The request does not name a client (client_id is missing).');
  const client = await deps.tokens.clients.get(clientId);
  if (!client) throw new PageError('The application is not known to this server.', 400, 'client_not_found');
  if (client.status !== 'active') throw new PageError('The application is disabled.', 403, 'client_disabled');
  if (await deps.tokens.revocations.tenantRefused(client.tenantId)) throw new PageError('Sign-in is unavailable: this organization is suspended.', 403, 'forbidden');
  return client;
}
