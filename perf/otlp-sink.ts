import http from 'node:http';

// An OTLP/HTTP receiver that only counts what it is sent, for measuring svc with tracing on
// (perf/README.md): `node dist/perf/otlp-sink.js [port]`, then run the harness with
// OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:<port> and the sampler to measure. It prints the spans
// received every 5 s, so a run shows the exporter kept up (or what it dropped).
const port = Number(process.argv[2] ?? 4318);
let spans = 0;
let posts = 0;
let bytes = 0;
http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => { body += c; });
  req.on('end', () => {
    posts++;
    bytes += body.length;
    // Counting `"spanId"` occurrences is enough: spans (not links or events) each carry one, parents as parentSpanId.
    spans += body.split('"spanId"').length - 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
}).listen(port, '127.0.0.1', () => console.log(`otlp sink on http://127.0.0.1:${port}`));
setInterval(() => console.log(`${new Date().toISOString()} posts ${posts} spans ${spans} bytes ${bytes}`), 5000).unref?.();
process.on('SIGTERM', () => { console.log(`final: posts ${posts} spans ${spans} bytes ${bytes}`); process.exit(0); });
