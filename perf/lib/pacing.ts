// Even pacing for autocannon's rate limit. Stock autocannon lets each connection send its whole
// per-second quota back to back at the top of every second, all connections in phase, so a "fixed
// rate" arrives as one burst per second and latency reflects the burst, not the rate. This patch
// spaces each connection's requests 1/rate apart with a random phase, so the server sees an even
// arrival stream; a connection behind schedule (slow answers) catches up by at most 1 s of backlog.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const Client = require('autocannon/lib/httpClient.js');
const orig = Client.prototype._doRequest;
let enabled = true;

export function setPacing(even: boolean): void { enabled = even; }

Client.prototype._doRequest = function paced(this: any, ...args: unknown[]) {
  if (!enabled || !this.rate) return orig.apply(this, args);
  if (this.destroyed || this._perfTimer) return undefined;
  const interval = 1000 / this.rate;
  const now = performance.now();
  if (this._perfNext === undefined) this._perfNext = now + Math.random() * interval;
  const wait = this._perfNext - now;
  if (wait >= 1) {
    this._perfTimer = setTimeout(() => { this._perfTimer = undefined; this._doRequest(); }, wait);
    return undefined;
  }
  this._perfNext = Math.max(this._perfNext + interval, now - 1000);
  this.reqsMadeThisSecond = 0; // the per-second quota is replaced by the spacing above
  return orig.apply(this, args);
};
