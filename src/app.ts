import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Deps } from './deps.js';
import { healthRoutes } from './health.js';
import { webhookRoutes } from './admin/webhooks.js';
import { adminRoutes } from './admin/index.js';
import { loginModules } from './login/index.js';
import { discoveryRoutes } from './oauth/discovery.js';
import { introspectRoutes } from './oauth/introspect.js';
import { revokeRoutes } from './oauth/revoke.js';
import { tokenRoutes } from './oauth/token.js';
import { buildOpenApi } from './http/openapi.js';
import { Router } from './http/router.js';
import type { Route } from './http/types.js';

const pkg = JSON.parse(fs.readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../package.json'), 'utf8')) as { version: string };

/** Every route module of the service; each feature adds its module's routes here. */
export function buildRouter(deps: Deps): Router {
  const router = new Router();
  const modules: Route[][] = [
    healthRoutes(deps),
    adminRoutes(deps),
    webhookRoutes(deps),
    discoveryRoutes(deps, () => router),
    loginModules(deps),
    tokenRoutes(deps),
    introspectRoutes(deps),
    revokeRoutes(deps),
  ];
  for (const routes of modules) for (const r of routes) router.add(r);
  let doc: string | undefined;
  router.add({
    method: 'GET', path: '/openapi.json', iface: 'public',
    handler: () => ({ type: 'application/json', body: (doc ??= JSON.stringify(buildOpenApi(router.routes, deps.config.issuer, pkg.version))) }),
  });
  return router;
}
