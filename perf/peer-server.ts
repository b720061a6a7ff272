// The peer: node-oidc-provider v9 in its most favourable setting — one process, its built-in memory
// adapter (an in-process LRU of 1000 entries), opaque client_credentials tokens (no resource
// indicators, so nothing is signed per token), introspection and revocation on. Started as a child
// process by perf/lib/peer.ts; reports {port, clients} over IPC.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import http from 'node:http';
import Provider from 'oidc-provider';

const port = Number(process.env.PEER_PORT ?? 0);
const secret = () => randomBytes(24).toString('base64url');
const cc = { client_id: 'peer-cc', client_secret: secret() };
const short = { client_id: 'peer-short', client_secret: secret() };
const rs = [1, 2, 3].map((i) => ({ client_id: `peer-rs-${i}`, client_secret: secret() }));
const scope = 'api:read';
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'peer-rs256', alg: 'RS256', use: 'sig' };

const asClient = (c: { client_id: string; client_secret: string }, grants: string[]) => ({
  ...c, grant_types: grants, redirect_uris: [], response_types: [], scope, token_endpoint_auth_method: 'client_secret_basic',
});

const issuer = `http://127.0.0.1:${port || 'peer'}`;
const provider = new Provider(issuer, {
  clients: [asClient(cc, ['client_credentials']), asClient(short, ['client_credentials']), ...rs.map((c) => asClient(c, ['client_credentials']))],
  jwks: { keys: [jwk] },
  cookies: { keys: [secret()] },
  scopes: [scope],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
  },
  ttl: {
    ClientCredentials: (_ctx: unknown, _token: unknown, client: { clientId: string }) => (client.clientId === short.client_id ? 1 : 7200),
  },
  // No leeway, so a token 2 s past its exp is expired.
  clockTolerance: 0,
});
provider.proxy = false;

const server = http.createServer(provider.callback());
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1', () => {
  const addr = server.address() as { port: number };
  process.send?.({ type: 'peer:ready', port: addr.port, cc, short, rs, scope });
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
process.on('disconnect', () => process.exit(0));
