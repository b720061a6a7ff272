import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { approvalArtifactRoutes } from './account/approval-artifacts.js';
import { consentRoutes } from './account/consents.js';
import { userSessionRoutes } from './account/admin-user-sessions.js';
import { accountRoutes } from './account/routes.js';
import { adminRoutes } from './admin/index.js';
import { webhookRoutes } from './admin/webhooks.js';
import { fieldMappingRoutes } from './admin/field-mapping.js';
import { pluginRoutes } from './admin/plugins.js';
import { userJobRoutes } from './admin/user-jobs.js';
import { checkRoutes } from './check/routes.js';
import { consoleRoutes } from './console-host/routes.js';
import type { Deps } from './deps.js';
import { healthRoutes } from './health.js';
import { buildOpenApi } from './http/openapi.js';
import { Router } from './http/router.js';
import type { Route } from './http/types.js';
import { loginModules } from './login/index.js';
import { oauthRoutes } from './oauth/index.js';

const pkg = JSON.parse(fs.readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../package.json'), 'utf8')) as { version: string };

/**
 * The routes table: every endpoint of the service, each mounted by the folder that owns it. A new
 * feature adds one line here; nothing else mounts routes.
 */
export function routesTable(deps: Deps, router: () => Router): Array<{ owner: string; routes: Route[] }> {
  return [
    { owner: 'src/health.ts', routes: healthRoutes(deps) },
    { owner: 'src/admin/index.ts', routes: adminRoutes(deps) },
    { owner: 'src/admin/webhooks.ts', routes: webhookRoutes(deps) },
    { owner: 'src/admin/field-mapping.ts', routes: fieldMappingRoutes(deps) },
    { owner: 'src/admin/plugins.ts', routes: pluginRoutes(deps) },
    { owner: 'src/admin/user-jobs.ts', routes: userJobRoutes(deps) },
    { owner: 'src/check/routes.ts', routes: checkRoutes(deps) },
    { owner: 'src/oauth/index.ts', routes: oauthRoutes(deps, router) },
    { owner: 'src/login/index.ts', routes: loginModules(deps) },
    { owner: 'src/account/consents.ts', routes: consentRoutes(deps) },
    { owner: 'src/account/admin-user-sessions.ts', routes: userSessionRoutes(deps) },
    { owner: 'src/account/routes.ts', routes: accountRoutes(deps) },
    { owner: 'src/account/approval-artifacts.ts', routes: approvalArtifactRoutes(deps) },
    { owner: 'src/console-host/routes.ts', routes: consoleRoutes() },
  ];
}

/** The router of an HTTP process: the routes table, plus the OpenAPI document describing it. */
export function buildRouter(deps: Deps): Router {
  const router = new Router();
  for (const { routes } of routesTable(deps, () => router)) for (const r of routes) router.add(r);
  let doc: string | undefined;
  router.add({
    method: 'GET', path: '/openapi.json', iface: 'public',
    handler: () => ({ type: 'application/json', body: (doc ??= JSON.stringify(buildOpenApi(router.routes, deps.config.issuer, pkg.version))) }),
  });
  return router;
}
