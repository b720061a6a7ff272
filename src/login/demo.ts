import type { Deps } from '../deps.js';
import type { Route } from '../http/types.js';
import { escapeHtml as esc } from '../http/html.js';
import { page } from '../http/pages.js';

/**
 * The demo client's landing pages (the bootstrap `web` client redirects to ${issuer}/demo/callback), so
 * a person running `npm start` sees where the flow ends and how to redeem the code. Not in production.
 */
export function demoRoutes(deps: Deps): Route[] {
  if (deps.config.env === 'production') return [];
  const { issuer } = deps.config;
  return [
    {
      method: 'GET', path: '/demo/callback', iface: 'public',
      handler: (req) => {
        const q = req.searchParams();
        const code = q.get('code');
        if (!code) return page('Sign-in did not complete', `<p>Error: <code>${esc(q.get('error') ?? 'none')}</code> ${esc(q.get('error_description') ?? '')}</p>`, { status: 400 });
        const curl = `curl -s -u <client_id>:<client_secret> -d grant_type=authorization_code -d code=${code} -d redirect_uri=${issuer}/demo/callback ${issuer}/token`;
        return page('Signed in', `<p>The demo application received an authorization code (valid for one minute, usable once):</p><p><code id="code">${esc(code)}</code></p>` +
          `<p>Redeem it with the <code>web</code> client from <code>.data/bootstrap.json</code>:</p><pre>${esc(curl)}</pre>`);
      },
    },
    { method: 'GET', path: '/demo/logged-out', iface: 'public', handler: () => page('Signed out', '<p>The demo application is signed out.</p>') },
  ];
}
