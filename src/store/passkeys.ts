import { newId } from './ids.js';
import type { Db } from '../sql.js';

export interface PasskeyRow {
  id: string; tenant_id: string; user_id: string; credential_id: string; public_key: Buffer; counter: number;
  transports: string[]; backup_eligible: boolean; backed_up: boolean; aaguid: string | null; device_name: string | null;
  created_at: number; last_used_at: number | null;
}

export interface NewPasskey {
  userId: string; credentialId: string; publicKey: Uint8Array; counter: number; transports: string[];
  backupEligible: boolean; backedUp: boolean; aaguid: string | null; deviceName: string | null;
}

const num = (r: PasskeyRow): PasskeyRow => ({ ...r, counter: Number(r.counter), created_at: Number(r.created_at), last_used_at: r.last_used_at === null ? null : Number(r.last_used_at) });

/** End users' passkeys in one tenant. Every read and write by user also names the user, so a foreign id is simply absent. */
export class PasskeyRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /** Stores a new credential; null when this credential id is already registered in the tenant. */
  async insert(p: NewPasskey): Promise<PasskeyRow | null> {
    const [row] = await this.db<PasskeyRow[]>`
      insert into passkeys (id, tenant_id, user_id, credential_id, public_key, counter, transports, backup_eligible, backed_up, aaguid, device_name)
      values (${newId('pk')}, ${this.tenantId}, ${p.userId}, ${p.credentialId}, ${Buffer.from(p.publicKey)}, ${p.counter}, ${p.transports},
              ${p.backupEligible}, ${p.backedUp}, ${p.aaguid}, ${p.deviceName})
      on conflict (tenant_id, credential_id) do nothing
      returning *`;
    return row ? num(row) : null;
  }

  async listForUser(userId: string): Promise<PasskeyRow[]> {
    const rows = await this.db<PasskeyRow[]>`select * from passkeys where tenant_id = ${this.tenantId} and user_id = ${userId} order by created_at, id`;
    return rows.map(num);
  }

  async countForUser(userId: string): Promise<number> {
    const [r] = await this.db<{ n: number }[]>`select count(*)::int as n from passkeys where tenant_id = ${this.tenantId} and user_id = ${userId}`;
    return r!.n;
  }

  async getForUser(userId: string, id: string): Promise<PasskeyRow | null> {
    const [row] = await this.db<PasskeyRow[]>`select * from passkeys where tenant_id = ${this.tenantId} and user_id = ${userId} and id = ${id}`;
    return row ? num(row) : null;
  }

  /** The credential a sign-in presents, by its WebAuthn id. */
  async findByCredentialId(credentialId: string): Promise<PasskeyRow | null> {
    const [row] = await this.db<PasskeyRow[]>`select * from passkeys where tenant_id = ${this.tenantId} and credential_id = ${credentialId}`;
    return row ? num(row) : null;
  }

  async rename(userId: string, id: string, deviceName: string): Promise<PasskeyRow | null> {
    const [row] = await this.db<PasskeyRow[]>`
      update passkeys set device_name = ${deviceName} where tenant_id = ${this.tenantId} and user_id = ${userId} and id = ${id} returning *`;
    return row ? num(row) : null;
  }

  async delete(userId: string, id: string): Promise<boolean> {
    const rows = await this.db`delete from passkeys where tenant_id = ${this.tenantId} and user_id = ${userId} and id = ${id} returning id`;
    return rows.length === 1;
  }

  /**
   * Records a successful assertion. The counter only moves forward: when another sign-in raced ahead
   * (or the stored counter is not below the new one, and either is non-zero) nothing is written and
   * false is returned, so a cloned authenticator cannot slip in between.
   */
  async recordUse(id: string, previousCounter: number, newCounter: number, backedUp: boolean, at = Date.now()): Promise<boolean> {
    const rows = await this.db`
      update passkeys set counter = ${newCounter}, backed_up = ${backedUp}, last_used_at = ${at}
      where tenant_id = ${this.tenantId} and id = ${id} and counter = ${previousCounter} returning id`;
    return rows.length === 1;
  }
}

/** An event of the user's, with the name of the application it names (null when it names none, or one since deleted). */
export interface ActivityRow { id: number; event: string; data: Record<string, unknown>; occurred_at: number; client_name: string | null }

/** A user's own recent events (the outbox keeps them), for the account page's "recent activity". */
export class AccountActivityRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  async recentForUser(userId: string, limit = 10): Promise<ActivityRow[]> {
    const rows = await this.db<ActivityRow[]>`
      select e.id, e.event, e.data, e.occurred_at, c.name as client_name from event_outbox e
      left join clients c on c.tenant_id = e.tenant_id and c.client_id = e.data->>'client_id'
      where e.tenant_id = ${this.tenantId} and e.data->>'user_id' = ${userId} order by e.id desc limit ${limit}`;
    return rows.map((r) => ({ ...r, id: Number(r.id), occurred_at: Number(r.occurred_at) }));
  }
}
