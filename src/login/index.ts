import type { Deps } from '../deps.js';
import type { Route } from '../http/types.js';
import { demoRoutes } from './demo.js';
import { loginRoutes } from './routes.js';

export { closeLogin } from './context.js';

/** The routes of end-user sign-in: email code, resume and consent after /authorize, the pages' assets, demo pages. */
export function loginModules(deps: Deps): Route[] {
  return [...loginRoutes(deps), ...demoRoutes(deps)];
}
