// The issuer `npm start` gives a server on this machine. WebAuthn (passkeys) works only on a host name,
// never on an IP address, so a loopback server is announced as http://localhost:PORT while it still
// listens on HOST (127.0.0.1). An ISSUER given is kept; a HOST that is not loopback keeps the server's
// own default (http://HOST:PORT), since localhost would not reach it from elsewhere.
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

export function localIssuer(env) {
  if (env.ISSUER) return env.ISSUER;
  if (!LOOPBACK.has(env.HOST ?? '127.0.0.1')) return undefined;
  return `http://localhost:${env.PORT || '8080'}`;
}
