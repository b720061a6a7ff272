import { consentRoutes } from '../account/consents.js';
import type { Deps } from '../deps.js';
import type { Route } from '../http/types.js';
import { authorizeRoutes } from '../oauth/authorize.js';
import { logoutRoutes } from '../oauth/logout.js';
import { userinfoRoutes } from '../oauth/userinfo.js';
import { demoRoutes } from './demo.js';
import { loginRoutes } from './routes.js';

export { closeLogin } from './context.js';

/** Every route of end-user login: authorize, email code, consent, userinfo, logout, consents, demo pages. */
export function loginModules(deps: Deps): Route[] {
  return [...authorizeRoutes(deps), ...loginRoutes(deps), ...userinfoRoutes(deps), ...logoutRoutes(deps), ...consentRoutes(deps), ...demoRoutes(deps)];
}
