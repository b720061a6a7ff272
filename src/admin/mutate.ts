import type { Deps } from '../deps.js';
import type { HttpRequest } from '../http/request.js';
import type { TxSql } from '../store/sql.js';
import { auditedChange, type AuditSpec, type MutationOutcome } from './route.js';
import type { AdminContext } from './types.js';

export type { MutationOutcome } from './route.js';

export interface MutationSpec extends AuditSpec {
  resourceId?: string | undefined;
}

/** @deprecated Declare the route with adminRoute and call `mutate`; kept while routes move over. */
export function audited<T>(deps: Deps, ctx: AdminContext, req: HttpRequest, spec: MutationSpec,
  fn: (tx: TxSql) => Promise<MutationOutcome<T>>): Promise<T> {
  return auditedChange(deps, ctx, req, spec, (tx) => fn(tx));
}
