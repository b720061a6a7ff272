/** RFC 9728 3: the well-known path under which protected resource metadata is served. */
export const PRM_PATH = '/.well-known/oauth-protected-resource';

/**
 * Where svc serves the metadata of a resource server registered in a tenant. RFC 9728 3.1 would insert
 * the well-known path into the identifier itself, on the resource server's own host, which svc does not
 * serve; the tenant and id make the URL unique (two tenants may register the same identifier).
 */
export function resourceMetadataUrl(issuer: string, tenantId: string, id: string): string {
  return `${issuer}${PRM_PATH}/tenants/${encodeURIComponent(tenantId)}/${encodeURIComponent(id)}`;
}

/** The metadata URL of a resource svc itself serves at `path` under the issuer (RFC 9728 3.1 exactly). */
export function ownMetadataUrl(issuer: string, path: string): string {
  return `${issuer}${PRM_PATH}${path}`;
}

/** The check API's resource identifier: its keys are not OAuth tokens, so its metadata names no authorization server. */
export const checkResource = (issuer: string) => `${issuer}/api/check`;

/** Where the administration API's and the check API's metadata are (RFC 9728 3.1: the well-known path inserted before theirs). */
export const adminMetadataUrl = (issuer: string) => ownMetadataUrl(issuer, '/api/admin');
export const checkMetadataUrl = (issuer: string) => ownMetadataUrl(issuer, '/api/check');

/** RFC 9728 5.1: the challenge a 401 of one of our resources carries, pointing at its metadata. */
export function bearerChallenge(metadataUrl: string): string {
  return `Bearer resource_metadata="${metadataUrl}"`;
}
