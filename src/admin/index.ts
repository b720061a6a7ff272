import type { Deps } from '../deps.js';
import type { Route } from '../http/types.js';
import { approvalRoutes } from './approvals.js';
import { auditLogRoutes } from './audit-log.js';
import { checkApiKeyRoutes } from './check-api-keys.js';
import { clientRoutes } from './clients.js';
import { dashboardRoutes } from './dashboard.js';
import { loggingRoutes } from './logging.js';
import { loggingGovernanceRoutes } from './logging-governance.js';
import { piiPartitionRoutes } from './pii-partitions.js';
import { lookupHmacRoutes } from './lookup-hmac.js';
import { policyRoutes } from './policies.js';
import { principalRoutes } from './principals.js';
import { resourceServerRoutes } from './resource-servers.js';
import { registrationAdminRoutes } from './registration.js';
import { roleRoutes } from './roles.js';
import { shardingRoutes } from './sharding.js';
import { tenantRoutes } from './tenants.js';
import { userRoutes } from './users.js';

/** Every administration-core route (webhooks and the check API its keys are for are mounted by src/app.ts). */
export function adminRoutes(deps: Deps): Route[] {
  return [
    ...auditLogRoutes(deps),
    ...userRoutes(deps),
    ...roleRoutes(deps),
    ...clientRoutes(deps),
    ...resourceServerRoutes(deps),
    ...registrationAdminRoutes(deps),
    ...principalRoutes(deps),
    ...shardingRoutes(deps),
    ...piiPartitionRoutes(deps),
    ...lookupHmacRoutes(deps),
    ...checkApiKeyRoutes(deps),
    ...policyRoutes(deps),
    ...approvalRoutes(deps),
    ...tenantRoutes(deps),
    ...loggingRoutes(deps),
    ...loggingGovernanceRoutes(deps),
    ...dashboardRoutes(deps),
  ];
}
