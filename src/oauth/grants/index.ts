import { authorizationCode } from './authorization-code.js';
import { clientCredentials } from './client-credentials.js';
import { deviceCode } from './device-code.js';
import type { Grant } from './grant.js';
import { refreshToken } from './refresh-token.js';
import { tokenExchange } from './token-exchange.js';

/** The grant table: /token dispatches on grant_type through this map, and discovery lists its keys. */
export const grants: ReadonlyMap<string, Grant> = new Map([clientCredentials, tokenExchange, refreshToken, authorizationCode, deviceCode].map((g) => [g.type, g]));
