import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as the OTLP/HTTP JSON exporter posts it. */
export interface OtlpSpan {
  traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number;
  startTimeUnixNano?: string; endTimeUnixNano?: string;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

/** What a local OTLP/HTTP receiver has been sent: every span, and every request body as posted. */
export interface OtlpReceiver { url: string; spans: OtlpSpan[]; bodies: string[]; close(): Promise<void> }

/**
 * A collector's OTLP/HTTP JSON receiver on a free loopback port: the tracing tests point svc's real
 * exporter at it and read what an operator's collector would show.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: OtlpSpan[] = [];
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString('utf8'); });
    req.on('end', () => {
      bodies.push(body);
      const doc = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
      for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, bodies,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export const hex = (n: number) => [...crypto.getRandomValues(new Uint8Array(n))].map((x) => x.toString(16).padStart(2, '0')).join('');

/** A fresh sampled traceparent and the ids in it. */
export function parent(): { traceId: string; spanId: string; header: string } {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

/** A span attribute's value, whatever its OTLP type. */
export const attr = (s: OtlpSpan, key: string): unknown => { const v = s.attributes?.find((a) => a.key === key)?.value; return v ? Object.values(v)[0] : undefined; };

/** Whether `s` descends from the span `ancestor` within `all` (its trace). */
export function descends(all: OtlpSpan[], s: OtlpSpan, ancestor: string): boolean {
  for (let p = s.parentSpanId; p; p = all.find((x) => x.spanId === p)?.parentSpanId) if (p === ancestor) return true;
  return false;
}
