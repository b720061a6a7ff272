import { Conflict } from '../errors.js';
import { ClientRepository, type NewClient } from '../store/clients.js';
import { newId, randomToken } from '../store/ids.js';
import type { Db } from '../sql.js';
import { hashSecret } from '../tokens/secrets.js';
import type { Client } from './model.js';

export type ClientInput = Omit<NewClient, 'clientId' | 'secretHash'> & { tenantId: string; clientId?: string | undefined };

/**
 * Registers a client in its tenant (on the pool or in the caller's transaction). Secret-authenticated
 * clients get a server-generated 256-bit secret, returned here once and stored only as its keyed hash.
 */
export async function createClient(db: Db, secretKey: Buffer, input: ClientInput): Promise<{ client: Client; clientSecret: string | null }> {
  const { tenantId, ...fields } = input;
  const method = input.authMethod ?? 'client_secret_basic';
  const clientSecret = method === 'client_secret_basic' || method === 'client_secret_post' ? randomToken(32) : null;
  const clientId = input.clientId ?? newId('c');
  const client = await new ClientRepository(db, tenantId).insert({
    ...fields, clientId, authMethod: method, secretHash: clientSecret ? hashSecret(secretKey, clientSecret) : null,
  });
  if (!client) throw new Conflict('client_id_already_exists', 'A client with this client_id already exists.');
  return { client, clientSecret };
}
