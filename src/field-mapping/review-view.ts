import type { ReviewTaskRow } from '../store/review-tasks.js';

/** A review task as the admin API shows it: the pending change is named by its fields, never shown. */
export function reviewTaskView(t: ReviewTaskRow) {
  return {
    id: t.id, task_type: t.task_type, status: t.status, assigned_to: t.assigned_to, reason_codes: t.reason_codes,
    reasons: t.reasons, job_id: t.job_id, row_index: t.row_index, user_id: t.user_id,
    pending_fields: t.pending_change ? Object.keys(t.pending_change).sort() : [],
    created_at: Number(t.created_at), updated_at: Number(t.updated_at),
  };
}
