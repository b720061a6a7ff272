import type { Unqueued } from '../cross-tenant/webhook-deliveries.js';

/** One handed-off delivery as its attempt sees it. */
export interface HeldClaim {
  /** The queued_at value the delivery is held under now (minus the end of its lease). */
  readonly mark: number;
  /**
   * Called right before the request goes out: false once the process is closing, and then the
   * attempt must not be sent (its delivery has been given back for the queue).
   */
  begin(): boolean;
}

/** Where the leases live (CrossTenantDeliveries). */
export interface LeaseStore {
  renewHeld(items: Array<{ tenant_id: string; id: string; mark: number }>, newMark: number): Promise<Set<string>>;
  releaseHeld(items: Array<{ tenant_id: string; id: string; mark: number }>): Promise<void>;
}

export interface HandoffOptions {
  /** Most deliveries held at once (waiting for a send slot or in flight); beyond that the relay uses the queue. */
  limit: number;
  /** How long a claim holds a delivery before any relay may release it (renewed while held). */
  leaseMs: number;
  /** Called after deliveries were given back (closing), so the relay enqueues them. */
  released: () => void;
  failed: (err: unknown) => void;
}

type Entry = { item: Unqueued; mark: number; sending: boolean };

/**
 * The webhook worker's in-process path for fresh deliveries (issue 35: event-to-receipt latency):
 * the relay of the same process hands over what it just fanned out, claimed in the fan-out's own
 * transaction under a lease (queued_at = -(claim time + leaseMs)), and they run as attempts at once,
 * without a BullMQ job. Everything else stays on the queue: a failed attempt's retry is a BullMQ job
 * (recorded like any other), and a process that dies holding deliveries leaves their leases to run
 * out, after which any relay releases them to the queue (releaseLostClaims). Leases of deliveries held
 * long (waiting for a send slot, a slow receiver) are renewed, so a live process never loses its claim.
 */
export class FreshHandoff {
  private readonly held = new Set<Entry>();
  private readonly running = new Set<Promise<unknown>>();
  private closing = false;
  private readonly timer: NodeJS.Timeout;
  private renewing = false;

  constructor(private readonly run: (item: Unqueued, claim: HeldClaim) => Promise<unknown>, private readonly store: LeaseStore, readonly opts: HandoffOptions) {
    this.timer = setInterval(() => void this.renew(), Math.max(50, Math.floor(opts.leaseMs / 3)));
    this.timer.unref();
  }

  get leaseMs(): number { return this.opts.leaseMs; }

  /** How many more deliveries it takes now (0 while closing). */
  room(): number {
    return this.closing ? 0 : Math.max(0, this.opts.limit - this.held.size);
  }

  /** Starts an attempt for each delivery, claimed under `mark`; once closing, gives them back instead. */
  take(items: Unqueued[], mark: number): void {
    if (this.closing) { void this.giveBack(items.map((item) => ({ item, mark, sending: false }))); return; }
    for (const item of items) {
      const e: Entry = { item, mark, sending: false };
      this.held.add(e);
      const claim: HeldClaim = {
        get mark() { return e.mark; },
        begin: () => { if (this.closing) return false; e.sending = true; return true; },
      };
      const p = this.run(item, claim).catch(this.opts.failed).finally(() => { this.held.delete(e); this.running.delete(p); });
      this.running.add(p);
    }
  }

  /** Stops taking; deliveries not yet sending are given back to the queue; waits for those in flight. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    await this.giveBack([...this.held].filter((e) => !e.sending));
    while (this.running.size) await Promise.allSettled([...this.running]);
  }

  private async giveBack(entries: Entry[]): Promise<void> {
    if (!entries.length) return;
    try {
      await this.store.releaseHeld(entries.map((e) => ({ tenant_id: e.item.tenant_id, id: e.item.id, mark: e.mark })));
      this.opts.released();
    } catch (err) {
      // Their leases run out instead, and a relay releases them then.
      this.opts.failed(err);
    }
  }

  /** Moves the leases that are a third used up to a full lease from now (one statement; usually none). */
  private async renew(): Promise<void> {
    if (this.renewing || this.closing) return;
    const now = Date.now();
    const due = [...this.held].filter((e) => -e.mark < now + (2 * this.opts.leaseMs) / 3);
    if (!due.length) return;
    this.renewing = true;
    const newMark = -(now + this.opts.leaseMs);
    try {
      const renewed = await this.store.renewHeld(due.map((e) => ({ tenant_id: e.item.tenant_id, id: e.item.id, mark: e.mark })), newMark);
      for (const e of due) if (renewed.has(`${e.item.tenant_id}\0${e.item.id}`)) e.mark = newMark;
    } catch (err) {
      this.opts.failed(err);
    } finally {
      this.renewing = false;
    }
  }
}
