/**
 * A limit on the webhook requests one worker process has in flight (WEBHOOK_CONCURRENCY). A queue job
 * can carry a batch of attempts (src/events/relay.ts), so the consumer's job concurrency alone no longer
 * bounds the requests; without this a request could wait for a pooled socket inside node:http while its
 * timeout runs. Slots are handed out in the order asked for.
 */
export class SendSlots {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(size: number) { this.free = size; }

  /** Runs `fn` once a slot is free, and frees it when `fn` settles. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next(); else this.free++;
    }
  }
}
