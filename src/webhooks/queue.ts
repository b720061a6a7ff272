/**
 * One job per (delivery, attempt). Adding a job whose id exists is a no-op in BullMQ, which makes the
 * relay's enqueue-then-mark safe to repeat after a crash. (BullMQ ids may not contain ':'.) The job
 * itself is declared in src/jobs/table.ts (`webhook-delivery`).
 */
export function deliveryJobId(deliveryId: string, attempt: number): string {
  return `${deliveryId}.${attempt}`;
}
