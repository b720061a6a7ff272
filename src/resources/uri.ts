const ABSOLUTE = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\s]+[^#\s]*$/i;

/** RFC 8707 2: a resource is an absolute URI without a fragment. */
export function isResourceUri(r: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(r) && !r.includes('#');
}

/** A resource server's registered identifier: an absolute URI with a host, no fragment (RFC 9728 1.2). */
export function isResourceIdentifier(r: string): boolean {
  return ABSOLUTE.test(r) && URL.canParse(r);
}
