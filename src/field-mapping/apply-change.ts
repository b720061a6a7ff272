import { Conflict } from '../errors.js';
import { declareEvents } from '../events/declare.js';
import type { TenantStore } from '../store/index.js';
import type { PendingChange } from '../store/review-tasks.js';
import type { TxSql } from '../sql.js';
import type { User } from '../store/users.js';

/** An applied field-mapping change creates or updates a user. */
const fieldMappingEvents = declareEvents(['user.updated', 'user.created']);

/**
 * Writes a mapped row to the users of the store's tenant inside the caller's transaction, with the
 * event the admin API records for the same change: updates `userId` (metadata merged), or creates the
 * user. The one path by which imports and approved review tasks change users.
 */
export async function applyUserChange(tx: TxSql, store: TenantStore, userId: string | null, change: PendingChange): Promise<{ user: User; created: boolean }> {
  if (userId) {
    const cur = await store.users.lock(userId);
    if (cur) {
      const next = await store.users.update(userId, {
        email: change.email, ...(change.name !== undefined ? { name: change.name } : {}),
        ...(change.email_verified !== undefined ? { email_verified: change.email_verified } : {}),
        ...(change.metadata ? { metadata: { ...cur.metadata, ...change.metadata } } : {}),
      });
      if (next === 'email_taken') throw new Conflict('email_already_exists');
      const changed = Object.keys(change).filter((k) => k !== 'email' || change.email.toLowerCase() !== cur.email.toLowerCase()).sort();
      await fieldMappingEvents.emit(tx, store.tenantId, 'user.updated', { user_id: userId, email: next!.email, changed });
      return { user: next!, created: false };
    }
  }
  const created = await store.users.insert({ email: change.email, name: change.name ?? null, emailVerified: change.email_verified ?? false, metadata: change.metadata ?? {} });
  if (!created) throw new Conflict('email_already_exists');
  await fieldMappingEvents.emit(tx, store.tenantId, 'user.created', { user_id: created.id, email: created.email });
  return { user: created, created: true };
}
