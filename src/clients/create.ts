import { randomBytes } from 'node:crypto';
import { Conflict } from '../errors.js';
import type { Sql } from '../store/sql.js';
import { hashSecret, randomToken } from '../tokens/secrets.js';
import type { Client } from './model.js';
import { insertClient, type NewClient } from './repository.js';

export type ClientInput = Omit<NewClient, 'clientId' | 'secretHash'> & { clientId?: string };

/**
 * Registers a client. Secret-authenticated clients get a server-generated 256-bit secret, returned
 * here once and stored only as its keyed hash.
 */
export async function createClient(sql: Sql, secretKey: Buffer, input: ClientInput): Promise<{ client: Client; clientSecret: string | null }> {
  const method = input.authMethod ?? 'client_secret_basic';
  const clientSecret = method === 'client_secret_basic' || method === 'client_secret_post' ? randomToken(32) : null;
  const clientId = input.clientId ?? `c_${randomBytes(12).toString('hex')}`;
  const client = await insertClient(sql, { ...input, clientId, authMethod: method, secretHash: clientSecret ? hashSecret(secretKey, clientSecret) : null });
  if (!client) throw new Conflict('client_id_already_exists', 'A client with this client_id already exists.');
  return { client, clientSecret };
}
