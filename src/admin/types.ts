import type { JwtPayload } from '../tokens/jwt.js';

/** Who is calling the administration interface, and for which tenant (resolved by ./checks). */
export interface AdminContext {
  /** The tenant every query of this request is scoped to. */
  tenantId: string;
  actor: { type: 'user' | 'machine'; id: string; displayName: string; email: string | null };
  permissions: ReadonlySet<string>;
  /** May act on any tenant (tenant scope `all`). */
  platform: boolean;
  token: JwtPayload;
}

export type { TenantScope } from '../admin-access.js';
