import type { Db, Sql } from '../sql.js';
import type { CheckKeyRow } from '../store/check-api-keys.js';
import { toClient, type Client, type StoredRow } from '../store/clients.js';
import type { ClientRegistrationRow, InitialAccessTokenRow } from '../store/registrations.js';

// Credentials that name their tenant: the caller is not known until its credential is found, so these
// look it up across tenants; everything after runs in the tenant the record names.

/**
 * The one lookup of a client without its tenant, for client authentication (the per-process client
 * cache behind /token, /introspect, /revoke). Client ids are globally unique, so the endpoint finds the
 * client before it knows the tenant; the tenant then comes from the client record. Everything else goes
 * through a tenant's ClientRepository.
 */
export async function findClientForAuthentication(sql: Sql, clientId: string): Promise<Client | null> {
  const [row] = await sql<StoredRow[]>`select * from clients where client_id = ${clientId}`;
  return row ? toClient(row) : null;
}

/**
 * The key a caller presented, found by its keyed hash. The one lookup without a tenant, on purpose:
 * the /api/check caller is not yet known, and the key itself names its tenant (as a client id does
 * at /token). Everything after this runs in the key's tenant.
 */
export async function findCheckKeyByHash(db: Db, hash: Buffer): Promise<CheckKeyRow | null> {
  const [row] = await db<CheckKeyRow[]>`select * from check_api_keys where key_hash = ${hash}`;
  return row ?? null;
}

/**
 * The registration a client management request names, found without a tenant on purpose: the caller
 * is known only by the registration access token it presents for a client id (globally unique, as at
 * /token); the row then names the tenant, and everything after runs in it.
 */
export async function findRegistrationForManagement(sql: Sql, clientId: string): Promise<ClientRegistrationRow | null> {
  const [row] = await sql<ClientRegistrationRow[]>`select * from client_registrations where client_id = ${clientId}`;
  return row ?? null;
}

/** The initial access token a registration presents, by the id part of its value; it names its tenant. */
export async function findInitialAccessToken(sql: Sql, id: string): Promise<InitialAccessTokenRow | null> {
  const [row] = await sql<InitialAccessTokenRow[]>`select * from initial_access_tokens where id = ${id}`;
  return row ?? null;
}
