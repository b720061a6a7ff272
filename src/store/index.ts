import { ApprovalRepository } from './approvals.js';
import { AuditLogRepository } from './audit-log.js';
import { ClientRepository } from './clients.js';
import { LogArchiveRepository } from './log-archive.js';
import { LogGovernanceRepository } from './log-governance.js';
import { PrincipalRepository } from './principals.js';
import { CheckApiKeyRepository } from './check-api-keys.js';
import { PolicyRepository } from './policies.js';
import { PluginConfigRepository } from './plugin-configs.js';
import { ConsentRepository } from './consents.js';
import { AccountActivityRepository, PasskeyRepository } from './passkeys.js';
import { RefreshTokenRepository } from './refresh-tokens.js';
import { ResourceServerRepository } from './resource-servers.js';
import { RegistrationRepository } from './registrations.js';
import { ReviewTaskRepository } from './review-tasks.js';
import { RoleRepository } from './roles.js';
import { ShardingRepository } from './sharding.js';
import type { PiiVault } from '../pii/vault.js';
import { PiiSettingsRepository } from '../pii/settings.js';
import type { ReadReplica } from './replica.js';
import type { Db, Sql, TxSql } from '../sql.js';
import { UserRepository } from './users.js';
import { UserJobRepository } from './user-jobs.js';
import { WebhookRepository } from './webhooks.js';

/**
 * The repositories of one tenant, bound to it when created: no method takes a tenant id, so a query
 * that forgets the tenant cannot be written through them (in the manner of Hydra's persister and its
 * network id). Bound to the pool or to a transaction.
 */
export class TenantStore {
  constructor(readonly db: Db, readonly tenantId: string, readonly pii: PiiVault) {}

  get auditLog(): AuditLogRepository { return new AuditLogRepository(this.db, this.tenantId); }
  get roles(): RoleRepository { return new RoleRepository(this.db, this.tenantId); }
  get clients(): ClientRepository { return new ClientRepository(this.db, this.tenantId); }
  get principals(): PrincipalRepository { return new PrincipalRepository(this.db, this.tenantId); }
  get users(): UserRepository { return new UserRepository(this.db, this.tenantId, this.pii); }
  get policies(): PolicyRepository { return new PolicyRepository(this.db, this.tenantId); }
  get sharding(): ShardingRepository { return new ShardingRepository(this.db, this.tenantId); }
  get checkApiKeys(): CheckApiKeyRepository { return new CheckApiKeyRepository(this.db, this.tenantId); }
  get webhooks(): WebhookRepository { return new WebhookRepository(this.db, this.tenantId); }
  get consents(): ConsentRepository { return new ConsentRepository(this.db, this.tenantId); }
  get refreshTokens(): RefreshTokenRepository { return new RefreshTokenRepository(this.db, this.tenantId); }
  get passkeys(): PasskeyRepository { return new PasskeyRepository(this.db, this.tenantId); }
  get accountActivity(): AccountActivityRepository { return new AccountActivityRepository(this.db, this.tenantId); }
  get approvals(): ApprovalRepository { return new ApprovalRepository(this.db, this.tenantId); }
  get plugins(): PluginConfigRepository { return new PluginConfigRepository(this.db, this.tenantId); }
  get userJobs(): UserJobRepository { return new UserJobRepository(this.db, this.tenantId); }
  get reviewTasks(): ReviewTaskRepository { return new ReviewTaskRepository(this.db, this.tenantId); }
  get logArchive(): LogArchiveRepository { return new LogArchiveRepository(this.db, this.tenantId); }
  get piiSettings(): PiiSettingsRepository { return new PiiSettingsRepository(this.db, this.tenantId); }
  get logGovernance(): LogGovernanceRepository { return new LogGovernanceRepository(this.db, this.tenantId); }
  get resourceServers(): ResourceServerRepository { return new ResourceServerRepository(this.db, this.tenantId); }
  get registrations(): RegistrationRepository { return new RegistrationRepository(this.db, this.tenantId); }
}

/** Storage of a process: created once with the `sql` client, handed out per tenant. */
export class Store {
  constructor(readonly sql: Sql, readonly pii: PiiVault, readonly replica?: ReadReplica) {}

  forTenant(tenantId: string): TenantStore { return new TenantStore(this.sql, tenantId, this.pii); }

  /**
   * Repositories for reads that may lag a little (admin lists and gets, the audit log): on the read
   * replica when one is configured and it has replayed the last admin change, else on the primary.
   */
  async forReading(tenantId: string): Promise<TenantStore> {
    return this.replica ? new TenantStore(await this.replica.forRead(), tenantId, this.pii) : this.forTenant(tenantId);
  }

  /** One transaction with the tenant's repositories bound to it. */
  transaction<T>(tenantId: string, fn: (store: TenantStore, tx: TxSql) => Promise<T>): Promise<T> {
    return this.sql.begin((tx) => fn(new TenantStore(tx, tenantId, this.pii), tx)) as Promise<T>;
  }
}
