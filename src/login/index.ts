import type { Deps } from '../deps.js';
import type { Route } from '../http/types.js';
import { demoRoutes } from './demo.js';
import { deviceRoutes } from './device.js';
import { loginRoutes } from './routes.js';

export { closeLogin } from './context.js';

/** The routes of end-user sign-in: email code, resume and consent after /authorize, the device verification pages, the pages' assets, demo pages. */
export function loginModules(deps: Deps): Route[] {
  return [...loginRoutes(deps), ...deviceRoutes(deps), ...demoRoutes(deps)];
}
