import type { Client } from '../../clients/model.js';
import type { Deps } from '../../deps.js';
import { PageError, param, type Query } from './types.js';

/** Step 1: the client exists and is active. Failures are shown as a page: there is no trusted place to redirect to. */
export async function checkClient(deps: Deps, q: Query): Promise<Client> {
  const { client, tenantCheck } = await checkClientDeferred(deps, q);
  await tenantCheck;
  return client;
}

/**
 * checkClient with its Redis read (the tenant's suspension mark) left running: the caller awaits
 * `tenantCheck` before answering anything, and may send its own Redis writes meanwhile so they leave in
 * the same round trip (/authorize's interaction). A refused tenant rejects it with the 403 page.
 */
export async function checkClientDeferred(deps: Deps, q: Query): Promise<{ client: Client; tenantCheck: Promise<void> }> {
  const clientId = param(q, 'client_id', (m) => new PageError(m));
  if (!clientId) throw new PageError('The request does not name a client (client_id is missing).');
  const client = await deps.tokens.clients.get(clientId);
  if (!client) throw new PageError('The application is not known to this server.', 400, 'client_not_found');
  if (client.status !== 'active') throw new PageError('The application is disabled.', 403, 'client_disabled');
  const tenantCheck = deps.tokens.revocations.tenantRefused(client.tenantId, deps.trace).then((refused) => {
    if (refused) throw new PageError('Sign-in is unavailable: this organization is suspended.', 403, 'forbidden');
  });
  tenantCheck.catch(() => {}); // awaited by the caller; never an unhandled rejection meanwhile
  return { client, tenantCheck };
}
