import { AppError, type ErrorCode, type OAuthCode } from '../../errors.js';

/** A validated authorization request (RFC 6749 4.1.1, OpenID Connect Core 3.1.2.1). */
export interface AuthorizationRequest {
  tenantId: string;
  clientId: string;
  redirectUri: string;
  /** Whether redirect_uri was sent: the token request must then repeat it (RFC 6749 4.1.3). */
  redirectUriGiven: boolean;
  scope: string[];
  state?: string;
  nonce?: string;
  codeChallenge?: string;
  /** RFC 9449 10: the DPoP key thumbprint the code will be bound to. */
  dpopJkt?: string;
  /** RFC 8707: the resources the tokens are for, each an allowed audience of the client. */
  resource?: string[];
  /** The pushed request (RFC 9126) this came from: spent when the code is issued. */
  pushedId?: string;
  prompt: string[];
  maxAge?: number;
  loginHint?: string;
}

export type Query = Record<string, string | string[] | undefined>;

/** An error that may be sent back to the (already validated) redirect URI as RFC 6749 4.1.2.1 parameters. */
export class RedirectableError extends AppError {
  constructor(readonly oauthCode: OAuthCode, description: string) { super(400, oauthCode, description); }
}

/** An error shown to the user as a page: the client or redirect URI cannot be trusted (never redirected). */
export class PageError extends AppError {
  constructor(description: string, status = 400, code: ErrorCode = 'invalid_request') { super(status, code, description); }
}

/** One single-valued query parameter; repetition is invalid (RFC 6749 3.1). */
export function param(q: Query, name: string, onError: (msg: string) => Error): string | undefined {
  const v = q[name];
  if (Array.isArray(v)) throw onError(`The ${name} parameter must not be repeated.`);
  return v === '' ? undefined : v;
}
