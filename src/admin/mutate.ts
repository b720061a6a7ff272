import type { Deps } from '../deps.js';
import { AppError } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import type { TxSql } from '../store/sql.js';
import { recordAudit, type AuditSeverity } from './audit.js';
import type { AdminContext } from './context.js';

export interface MutationSpec {
  /** `<resource>.<verb>`, e.g. `user.create`. */
  action: string;
  resourceType: string;
  resourceId?: string | undefined;
  severity?: AuditSeverity;
}

export interface MutationOutcome<T> {
  result: T;
  resourceId?: string;
  before?: unknown;
  after?: unknown;
  metadata?: Record<string, unknown>;
}

function requestMeta(req: HttpRequest): Record<string, unknown> {
  return { request_id: req.requestId, ip: req.ip, user_agent: req.headers['user-agent'] ?? null };
}

/**
 * Runs an admin mutation in one transaction together with its audit entry (and whatever events `fn`
 * records in `tx`). A failed mutation rolls back and is then audited on its own as `failure`.
 */
export async function audited<T>(deps: Deps, ctx: AdminContext, req: HttpRequest, spec: MutationSpec,
  fn: (tx: TxSql) => Promise<MutationOutcome<T>>): Promise<T> {
  try {
    return await deps.sql.begin(async (tx) => {
      const out = await fn(tx);
      await recordAudit(tx, ctx, {
        action: spec.action, resourceType: spec.resourceType, resourceId: out.resourceId ?? spec.resourceId ?? null,
        severity: spec.severity ?? 'info', metadata: { ...requestMeta(req), ...out.metadata }, before: out.before, after: out.after,
      });
      return out.result;
    }) as T;
  } catch (err) {
    const known = err instanceof AppError;
    await recordAudit(deps.sql, ctx, {
      action: spec.action, resourceType: spec.resourceType, resourceId: spec.resourceId ?? null, result: 'failure',
      severity: known && err.status < 500 ? 'warn' : 'error',
      metadata: { ...requestMeta(req), error: known ? err.code : 'internal_error', status: known ? err.status : 500 },
    }).catch((e) => deps.log.error({ err: e }, 'audit entry for a failed admin mutation not written'));
    throw err;
  }
}
