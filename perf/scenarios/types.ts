import type { Checker, ReqSpec } from '../lib/checker.js';
import type { Flow } from '../lib/openloop.js';
import type { Target } from '../lib/target.js';
import type { Opts } from '../lib/util.js';

/** Raised by prepare() when the target cannot run the scenario (e.g. an endpoint is not there yet). */
export class Unavailable extends Error {}

export interface Prepared {
  /** Passed once to the load process; JSON only. */
  fixtures: unknown;
  /** Sequential probes of every request category before the load, with what came back. */
  calibration: Record<string, string>;
  notes: string[];
}

export interface Scenario {
  name: string;
  /** Rate unit of the ladder: requests, or whole logins (5 requests each). */
  unit: 'req/s' | 'logins/s';
  reqsPerUnit: number;
  start: number;
  factor: number;
  smtp?: boolean;
  /** Issue 7's p95 target for this scenario (per login for login), ms; capacity is also reported within it. */
  sloMs: number;
  describe: string;
  /** Main process: makes real tokens/clients through the target's own endpoints and CLI. */
  prepare(target: Target, opts: Opts): Promise<Prepared>;
  /** Load process: the autocannon request sequence, each answer checked into `check`. */
  client?(fixtures: any, check: Checker): ReqSpec[];
  /**
   * Load process, instead of `client`: one whole flow per arrival, run by the open-loop driver
   * (perf/lib/openloop.ts) at `rate / reqsPerUnit` arrivals per second; may await things outside HTTP.
   */
  flow?(fixtures: any, check: Checker): Flow;
}
