import t from 'tap';
import { EdgeSampler, rootRatioOf } from '../../src/tracing/edge-sampling.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { basic, setupTenant } from '../helpers/tokens.js';
import { AlwaysOffSampler } from '@opentelemetry/sdk-trace-base';
import { ROOT_CONTEXT, SamplingDecision, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { hex, startOtlpReceiver } from './otlp-receiver.js';

// The HTTP server decides head sampling for requests without a caller's trace before making any span
// (src/tracing/edge-sampling.ts). What an operator sees at OTEL_TRACES_SAMPLER=parentbased_traceidratio
// with a ratio of one half: about half of the untraced requests, each with its child spans; every request
// whose caller sampled it; none whose caller did not.

const receiver = await startOtlpReceiver();
t.teardown(() => receiver.close());
const { spans } = receiver;

const srv = await startTestServer({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5',
});
t.teardown(() => srv.close());
const tenant = await setupTenant(srv, 'edge-sampling');
const rs = tenant.clients.resource_server;
const ex = tenant.clients.exchanger;
const { access_token: token } = await (await fetch(`${srv.url}/token`, { method: 'POST', headers: { authorization: basic(ex.client_id, ex.client_secret), 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials&scope=read' })).json() as { access_token: string };

/** Introspects the token, with a traceparent of the given flags when asked; returns that trace id. */
async function introspect(flags?: '01' | '00'): Promise<string | undefined> {
  const traceId = flags ? hex(16) : undefined;
  const headers: Record<string, string> = { authorization: basic(rs.client_id, rs.client_secret), 'content-type': 'application/x-www-form-urlencoded' };
  if (traceId) headers.traceparent = `00-${traceId}-${hex(8)}-${flags}`;
  const res = await fetch(`${srv.url}/introspect`, { method: 'POST', headers, body: new URLSearchParams({ token }) });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  return traceId;
}
const servers = () => spans.filter((s) => s.kind === 2 && s.name === 'POST /introspect');

t.test('untraced requests: about the ratio of them are traced, each with its child spans', async (t) => {
  const before = new Set(servers().map((s) => s.traceId));
  const n = 200;
  for (let i = 0; i < n; i++) await introspect();
  // Exports are batched every 50 ms: wait until the count stops moving.
  let last = -1;
  await waitFor(async () => { const c = servers().length; const still = c === last; last = c; return still && c > before.size; }, 10_000, 300);
  const mine = servers().filter((s) => !before.has(s.traceId) && !s.parentSpanId);
  // Binomial(200, 0.5): outside 60..140 has a probability below 1e-8.
  t.ok(mine.length >= 60 && mine.length <= 140, `${mine.length} of ${n} traced at a ratio of 0.5`);
  const withoutChild = () => mine.filter((s) => !spans.some((c) => c.traceId === s.traceId && c.parentSpanId === s.spanId && c.name.startsWith('redis ')));
  await waitFor(async () => withoutChild().length === 0, 10_000, 50).catch(() => {});
  t.same(withoutChild().map((s) => s.traceId), [], 'every traced request has its Redis read under it');
});

t.test('a caller\'s decision is followed: sampled requests are all traced, unsampled ones never', async (t) => {
  const sampled: string[] = [];
  const unsampled: string[] = [];
  for (let i = 0; i < 20; i++) { sampled.push((await introspect('01'))!); unsampled.push((await introspect('00'))!); }
  await waitFor(async () => sampled.every((id) => servers().some((s) => s.traceId === id)), 10_000, 50).catch(() => {});
  t.same(sampled.filter((id) => !servers().some((s) => s.traceId === id)), [], 'each request the caller sampled has its server span');
  t.same(unsampled.filter((id) => spans.some((s) => s.traceId === id)), [], 'no span of a request the caller did not sample');
});

t.test('the sampler: local children follow their parent, remote parents and roots go to the configured sampler', async (t) => {
  const s = new EdgeSampler(new AlwaysOffSampler());
  const ctxOf = (remote: boolean, sampled: boolean) => trace.setSpanContext(ROOT_CONTEXT, { traceId: hex(16), spanId: hex(8), isRemote: remote, traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE });
  const decide = (ctx: ReturnType<typeof ctxOf>) => s.shouldSample(ctx, hex(16), 'x', SpanKind.INTERNAL, {}, []).decision;
  t.equal(decide(ctxOf(false, true)), SamplingDecision.RECORD_AND_SAMPLED, 'a sampled local parent: recorded, whatever the configured sampler says');
  t.equal(decide(ctxOf(false, false)), SamplingDecision.NOT_RECORD, 'an unsampled local parent: not recorded');
  t.equal(decide(ctxOf(true, true)), SamplingDecision.NOT_RECORD, 'a remote parent: the configured sampler (always off here)');
  t.equal(decide(ROOT_CONTEXT), SamplingDecision.NOT_RECORD, 'a root: the configured sampler');
  t.same(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'].map((x) => rootRatioOf({ sampler: x as never, ratio: 0.25 })), [1, 0, 0.25, 1, 0, 0.25], 'the edge samples roots as each sampler would');
});
