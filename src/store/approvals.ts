import type { Cursor } from './cursor.js';
import type { Db } from '../sql.js';

export interface ApprovalRequestRow {
  tenant_id: string; id: string; investigation_id: string; request_surface: string; requested_action: string;
  target_subject_type: string; target_subject_id: string; resource_class: string; resource_ids: string[];
  redaction_level: string; reason_code: string; reason_note: string | null; ticket_reference: { system: string; id: string } | null;
  reference: string | null; policy_preset: string; partial_access_allowed: boolean; allow_reexchange: boolean; audience: string;
  requester_type: string; requester_id: string; requester_name: string; cancelled_at: number | null;
  status: string; expires_at: number; created_at: number; updated_at: number;
}
export type NewApprovalRequest = Omit<ApprovalRequestRow, 'tenant_id' | 'cancelled_at' | 'status' | 'created_at' | 'updated_at'>;

export interface ApprovalStepRow {
  tenant_id: string; request_id: string; id: string; position: number; step_key: string; side: string; subject_type: string;
  subject_id: string | null; method: string; status: string; expires_at: number; decided_by: string | null; decided_at: number | null;
  reason_code: string | null; reason_note: string | null;
}
export type NewApprovalStep = Pick<ApprovalStepRow, 'id' | 'step_key' | 'side' | 'subject_type' | 'subject_id' | 'method' | 'expires_at'>;

export interface ElevationGrantRow {
  tenant_id: string; id: string; request_id: string; status: string; authorization_details: Array<Record<string, unknown>>;
  audience: string; expires_at: number; revoked_at: number | null; revoke_reason: string | null; created_at: number;
}

export interface ApprovalArtifactRow {
  tenant_id: string; id: string; request_id: string; step_id: string; method: string; approver_id: string | null;
  issued_by: string; expires_at: number; consumed_at: number | null; created_at: number;
}

/** The status a request reads as now: the stored one, or expired once its or a pending step's expires_at has passed. */
const effective = (db: Db, now: number) => db`(case when r.status in ('pending', 'partially_approved', 'approved') and (r.expires_at <= ${now}
  or exists (select 1 from approval_steps s where s.tenant_id = r.tenant_id and s.request_id = r.id and s.status = 'pending' and s.expires_at <= ${now}))
  then 'expired' else r.status end)`;

/** Approval requests of one tenant, their steps, the grant an approval yields, its tokens, and artifacts. */
export class ApprovalRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  async insertRequest(r: NewApprovalRequest, steps: NewApprovalStep[]): Promise<ApprovalRequestRow> {
    const [row] = await this.db<ApprovalRequestRow[]>`insert into approval_requests ${this.db({ ...r, tenant_id: this.tenantId,
      ticket_reference: r.ticket_reference as never })} returning *`;
    if (steps.length) {
      await this.db`insert into approval_steps ${this.db(steps.map((s, i) => ({ ...s, tenant_id: this.tenantId, request_id: r.id, position: i })))}`;
    }
    return row!;
  }

  async getRequest(id: string, opts: { lock?: boolean } = {}): Promise<ApprovalRequestRow | null> {
    const sql = this.db;
    const [row] = await sql<ApprovalRequestRow[]>`select * from approval_requests where tenant_id = ${this.tenantId} and id = ${id}
      ${opts.lock ? sql`for update` : sql``}`;
    return row ?? null;
  }

  /** A page of requests, newest first, each with `effective_status` (its status as it reads at `now`). */
  /** `awaitingActor`: only requests waiting for that actor's decision (the queue of the console's approvals screen). */
  listRequests(f: { limit: number; cursor?: Cursor | undefined; status?: string | undefined; investigation_id?: string | undefined; awaitingActor?: string | undefined }, now: number): Promise<Array<ApprovalRequestRow & { effective_status: string }>> {
    const sql = this.db;
    const me = f.awaitingActor;
    return sql<Array<ApprovalRequestRow & { effective_status: string }>>`select * from (select r.*, ${effective(sql, now)} as effective_status
        from approval_requests r where r.tenant_id = ${this.tenantId}
        ${f.cursor ? sql`and (r.created_at, r.id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
        ${f.investigation_id ? sql`and r.investigation_id = ${f.investigation_id}` : sql``}
        ${me !== undefined ? sql`and r.requester_id <> ${me}
          and exists (select 1 from approval_steps s where s.tenant_id = ${this.tenantId} and s.request_id = r.id and s.status = 'pending'
            and (s.subject_id is null or s.subject_id = ${me}))
          and not exists (select 1 from approval_steps s where s.tenant_id = ${this.tenantId} and s.request_id = r.id and s.status = 'approved' and s.decided_by = ${me})` : sql``}) x
      where true ${f.status ? sql`and effective_status = ${f.status}` : sql``}
      ${me !== undefined ? sql`and effective_status in ('pending', 'partially_approved')` : sql``}
      order by created_at desc, id desc limit ${f.limit + 1}`;
  }

  setRequestStatus(id: string, status: string, cancelledAt?: number): Promise<unknown> {
    const sql = this.db;
    return sql`update approval_requests set status = ${status}, updated_at = now_ms(),
        cancelled_at = ${cancelledAt !== undefined ? cancelledAt : sql`cancelled_at`}
      where tenant_id = ${this.tenantId} and id = ${id}`;
  }

  steps(requestId: string): Promise<ApprovalStepRow[]> {
    return this.db<ApprovalStepRow[]>`select * from approval_steps where tenant_id = ${this.tenantId} and request_id = ${requestId} order by position`;
  }

  async decideStep(id: string, d: { status: string; by: string | null; at: number; reason_code?: string | null | undefined; reason_note?: string | null | undefined }): Promise<ApprovalStepRow | null> {
    const [row] = await this.db<ApprovalStepRow[]>`update approval_steps set status = ${d.status}, decided_by = ${d.by}, decided_at = ${d.at},
        reason_code = ${d.reason_code ?? null}, reason_note = ${d.reason_note ?? null}
      where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  /** Moves the request's pending steps to `status` (cancelled, expired). */
  closePendingSteps(requestId: string, status: 'cancelled' | 'expired', at: number): Promise<unknown> {
    return this.db`update approval_steps set status = ${status}, decided_at = ${at}
      where tenant_id = ${this.tenantId} and request_id = ${requestId} and status = 'pending'`;
  }

  async insertGrant(g: Pick<ElevationGrantRow, 'id' | 'request_id' | 'authorization_details' | 'audience' | 'expires_at'>): Promise<ElevationGrantRow> {
    const [row] = await this.db<ElevationGrantRow[]>`insert into elevation_grants (tenant_id, id, request_id, status, authorization_details, audience, expires_at)
      values (${this.tenantId}, ${g.id}, ${g.request_id}, 'active', ${this.db.json(g.authorization_details as never)}, ${g.audience}, ${g.expires_at}) returning *`;
    return row!;
  }

  grants(requestId: string): Promise<ElevationGrantRow[]> {
    return this.db<ElevationGrantRow[]>`select * from elevation_grants where tenant_id = ${this.tenantId} and request_id = ${requestId} order by created_at, id`;
  }

  async getGrant(grantId: string, opts: { lock?: boolean } = {}): Promise<ElevationGrantRow | null> {
    const sql = this.db;
    const [row] = await sql<ElevationGrantRow[]>`select * from elevation_grants where tenant_id = ${this.tenantId} and id = ${grantId}
      ${opts.lock ? sql`for update` : sql``}`;
    return row ?? null;
  }

  async closeGrant(grantId: string, status: 'revoked' | 'expired', at: number, reason: string): Promise<ElevationGrantRow | null> {
    const [row] = await this.db<ElevationGrantRow[]>`update elevation_grants set status = ${status}, revoked_at = ${at}, revoke_reason = ${reason}
      where tenant_id = ${this.tenantId} and id = ${grantId} and status = 'active' returning *`;
    return row ?? null;
  }

  recordToken(t: { grant_id: string; jti: string; kind: 'subject' | 'access'; client_id: string; expires_at: number }): Promise<unknown> {
    return this.db`insert into elevation_tokens ${this.db({ ...t, tenant_id: this.tenantId })}`;
  }

  /** Tokens minted from a grant that have not yet expired (what revoking the grant must revoke). */
  liveTokens(grantId: string, now: number): Promise<Array<{ jti: string; expires_at: number }>> {
    return this.db<{ jti: string; expires_at: number }[]>`select jti, expires_at from elevation_tokens
      where tenant_id = ${this.tenantId} and grant_id = ${grantId} and expires_at > ${now}`;
  }

  async insertArtifact(a: Pick<ApprovalArtifactRow, 'id' | 'request_id' | 'step_id' | 'method' | 'approver_id' | 'issued_by' | 'expires_at'>): Promise<ApprovalArtifactRow> {
    const [row] = await this.db<ApprovalArtifactRow[]>`insert into approval_artifacts ${this.db({ ...a, tenant_id: this.tenantId })} returning *`;
    return row!;
  }

  async getArtifact(id: string): Promise<ApprovalArtifactRow | null> {
    const [row] = await this.db<ApprovalArtifactRow[]>`select * from approval_artifacts where tenant_id = ${this.tenantId} and id = ${id}`;
    return row ?? null;
  }

  /** Consumes an unconsumed, unexpired artifact once; false when it was consumed or expired. */
  async consumeArtifact(id: string, now: number): Promise<boolean> {
    const r = await this.db`update approval_artifacts set consumed_at = ${now}
      where tenant_id = ${this.tenantId} and id = ${id} and consumed_at is null and expires_at > ${now}`;
    return r.count === 1;
  }

  /** True when the tenant has a client that is, or may obtain tokens for, this audience. */
  async audienceKnown(audience: string): Promise<boolean> {
    const [row] = await this.db<{ n: number }[]>`select count(*)::int as n from clients where tenant_id = ${this.tenantId}
      and (audience = ${audience} or ${audience} = any(allowed_audiences))`;
    return (row?.n ?? 0) > 0;
  }
}
