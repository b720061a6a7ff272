/**
 * Gathers concurrent calls into batches for one statement each (issue 35: the webhook worker's loads
 * and attempt records). Calls made while a batch runs wait for the next, which starts as soon as the
 * running one ends; calls of the same event-loop turn go together (setImmediate). So under load a batch
 * grows with the work in flight and one round trip and one commit serve it, and at low load each call
 * runs at once: no timer, no added wait.
 */
export class Batcher<I, O> {
  private queue: Array<{ item: I; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  private running = false;
  private scheduled = false;

  /** `run` answers one output per input, in order; if it throws, every call of its batch rejects. */
  constructor(private readonly run: (items: I[]) => Promise<O[]>, private readonly max = 500) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.running && !this.scheduled) { this.scheduled = true; setImmediate(() => { this.scheduled = false; this.pump(); }); }
    });
  }

  private pump(): void {
    if (this.running || !this.queue.length) return;
    const batch = this.queue.splice(0, this.max);
    this.running = true;
    this.run(batch.map((b) => b.item)).then(
      (out) => batch.forEach((b, i) => b.resolve(out[i]!)),
      (err) => batch.forEach((b) => b.reject(err)),
    ).finally(() => { this.running = false; this.pump(); });
  }
}
