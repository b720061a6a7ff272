// The floor of `perf -- cpu` (issue 35 item 4): the same POST a resource server's introspection sends,
// answered by bare uWebSockets.js servers (perf/bare-server.ts) with a fixed body — what the host costs
// per request with no svc work at all.
import { safeJson, type Checker, type ReqSpec } from '../lib/checker.js';
import type { Target } from '../lib/target.js';
import { postForm } from '../lib/util.js';
import { Unavailable, type Prepared, type Scenario } from './types.js';

export const bare: Scenario = {
  name: 'bare',
  unit: 'req/s', reqsPerUnit: 1, start: 1000, factor: 1.5,
  sloMs: 50,
  describe: 'POST /introspect to bare uWebSockets.js servers answering a fixed JSON body (the host\'s floor, same process count as svc)',

  async prepare(t: Target): Promise<Prepared> {
    const r = await postForm(`${t.url}/introspect`, { token: 'x' });
    if (r.status !== 200 || safeJson(r.text)?.active !== true) throw new Unavailable(`bare server answered ${r.status}`);
    return { fixtures: {}, calibration: { bare: 'ok 200' }, notes: [t.setting] };
  },

  client(_fx: unknown, check: Checker): ReqSpec[] {
    return [{
      method: 'POST', path: '/introspect', body: 'token=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      setupRequest(req) { check.sent('bare'); return req; },
      onResponse(status, body) {
        if (status === 200 && safeJson(body)?.active === true) check.ok(); else check.miss('bare', String(status));
      },
    }];
  },
};
