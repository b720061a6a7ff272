// The floor of the `cpu` runs (issue 35 item 4) and of wakeup-bench: a bare uWebSockets.js server (the
// HTTP layer svc uses) answering every POST with a fixed introspection-shaped JSON body. Several of
// these listen on one port (uWS sets SO_REUSEPORT), as svc's HTTP processes do.
//   node dist/perf/bare-server.js <port>   (a forked child: sends {port} once listening)
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
export const BARE_BODY = '{"active":true,"sub":"perf","scope":"api:read","client_id":"perf","token_type":"Bearer"}';

if (process.argv[1]?.endsWith('bare-server.js')) {
  const uws = require('uWebSockets.js');
  uws.App().post('/*', (res: any) => {
    res.onAborted(() => {});
    res.onData((_c: ArrayBuffer, last: boolean) => { if (last) res.cork(() => res.writeHeader('content-type', 'application/json').end(BARE_BODY)); });
  }).listen('127.0.0.1', Number(process.argv[2] ?? 0), (sock: any) => {
    if (!sock) { console.error('bare-server: listen failed'); process.exit(1); }
    process.send?.({ port: uws.us_socket_local_port(sock) });
  });
}
