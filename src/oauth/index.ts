import type { Deps } from '../deps.js';
import type { Router } from '../http/router.js';
import type { Route } from '../http/types.js';
import { authorizeRoutes } from './authorize.js';
import { deviceAuthorizationRoutes } from './device-authorization.js';
import { discoveryRoutes } from './discovery.js';
import { introspectRoutes } from './introspect.js';
import { logoutRoutes } from './logout.js';
import { parRoutes } from './par.js';
import { protectedResourceRoutes } from './protected-resource.js';
import { registrationRoutes } from './register.js';
import { statusListRoutes } from './status-lists.js';
import { revokeRoutes } from './revoke.js';
import { tokenRoutes } from './token.js';
import { userinfoRoutes } from './userinfo.js';

/**
 * The OAuth 2.0 / OpenID Connect endpoints: discovery, /authorize, /token, /introspect, /revoke,
 * /userinfo, /logout, /device_authorization. (The sign-in steps /authorize hands over to are login's: src/login/index.ts.)
 */
export function oauthRoutes(deps: Deps, router: () => Router): Route[] {
  return [
    ...discoveryRoutes(deps, router),
    ...protectedResourceRoutes(deps),
    ...authorizeRoutes(deps),
    ...parRoutes(deps),
    ...registrationRoutes(deps),
    ...deviceAuthorizationRoutes(deps),
    ...userinfoRoutes(deps),
    ...logoutRoutes(deps),
    ...tokenRoutes(deps),
    ...introspectRoutes(deps),
    ...revokeRoutes(deps),
    ...statusListRoutes(deps),
  ];
}
