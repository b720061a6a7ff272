import { BlockList, isIP } from 'node:net';
import type { Client } from '../clients/model.js';
import type { Deps } from '../deps.js';
import { Forbidden } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import type { PolicyCondition, PolicyRow } from '../store/policies.js';
import type { JwtPayload } from '../tokens/jwt.js';
import type { AdminContext } from './types.js';

/** Authentication strengths, weakest first (condition auth_strength). */
export const STRENGTHS = ['basic', 'otp', 'mfa', 'key'] as const;
export type Strength = (typeof STRENGTHS)[number];

export interface RequestFacts { ip: string; now: Date; strength: Strength }

/**
 * How strongly the caller authenticated. Machine tokens: `key` when the client proved possession of a
 * private key (private_key_jwt), else `basic` (a shared secret). User tokens, from RFC 8176 `amr`:
 * hwk/swk/pop/webauthn give `key`, mfa `mfa`, otp/email/sms `otp`, anything else `basic`.
 */
export function strengthOf(token: JwtPayload, client: Pick<Client, 'authMethod'> | null): Strength {
  if (token.sub === token.client_id) return client?.authMethod === 'private_key_jwt' ? 'key' : 'basic';
  const amr = Array.isArray(token.amr) ? token.amr.map(String) : [];
  if (amr.some((m) => ['hwk', 'swk', 'pop', 'webauthn'].includes(m))) return 'key';
  if (amr.includes('mfa')) return 'mfa';
  if (amr.some((m) => ['otp', 'email', 'sms'].includes(m))) return 'otp';
  return 'basic';
}

function inRanges(ip: string, cidrs: unknown): boolean {
  if (!Array.isArray(cidrs)) return false;
  const addr = ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
  const family = isIP(addr);
  if (!family) return false;
  const list = new BlockList();
  for (const c of cidrs) {
    const [net, bits] = String(c).split('/');
    const f = isIP(net ?? '');
    if (!f) continue;
    const prefix = bits === undefined ? (f === 4 ? 32 : 128) : Number(bits);
    list.addSubnet(net!, prefix, f === 4 ? 'ipv4' : 'ipv6');
  }
  return list.check(addr, family === 4 ? 'ipv4' : 'ipv6');
}

function minutes(hhmm: unknown): number | null {
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(String(hhmm));
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

function inWindow(now: Date, p: Record<string, unknown>): boolean {
  const tz = typeof p.timezone === 'string' ? p.timezone : 'UTC';
  let day: number, minute: number;
  try {
    const parts = new Intl.DateTimeFormat('en-US', { timeZone: tz, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(now);
    const get = (t: string) => parts.find((x) => x.type === t)?.value ?? '';
    day = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'].indexOf(get('weekday'));
    minute = Number(get('hour')) * 60 + Number(get('minute'));
  } catch { return false; }
  if (Array.isArray(p.days) && !p.days.includes(day)) return false;
  const start = minutes(p.start ?? '00:00');
  const end = minutes(p.end ?? '23:59');
  if (start === null || end === null) return false;
  // A window whose end is before its start runs over midnight.
  return start <= end ? minute >= start && minute <= end : minute >= start || minute <= end;
}

/** Whether one condition holds for this request; an unknown type never holds (and cannot be stored). */
export function conditionHolds(c: PolicyCondition, f: RequestFacts): boolean {
  const p = c.params ?? {};
  let v: boolean;
  switch (c.type) {
    case 'ip_range': v = inRanges(f.ip, p.cidrs); break;
    case 'time_window': v = inWindow(f.now, p); break;
    case 'auth_strength': {
      const have = STRENGTHS.indexOf(f.strength);
      if (typeof p.min === 'string') v = have >= STRENGTHS.indexOf(p.min as Strength);
      else if (typeof p.below === 'string') v = have < STRENGTHS.indexOf(p.below as Strength);
      else v = false;
      break;
    }
    default: v = false;
  }
  return p.negate === true ? !v : v;
}

/**
 * The decision of a tenant's enabled policies for one request: among the policies naming the
 * resource type and action whose conditions all hold, the highest priority decides, and `deny` wins at
 * equal priority. No matching policy: allowed (permissions were already checked).
 */
export function decide(policies: PolicyRow[], f: RequestFacts): { effect: 'allow' | 'deny'; policy: PolicyRow } | null {
  let top: PolicyRow[] = [];
  for (const p of policies) {
    if (top.length && p.priority < top[0]!.priority) break;
    if (p.conditions.every((c) => conditionHolds(c, f))) top.push(p);
  }
  if (!top.length) return null;
  const deny = top.find((p) => p.effect === 'deny');
  return deny ? { effect: 'deny', policy: deny } : { effect: 'allow', policy: top[0]! };
}

/**
 * Enforces the target tenant's admin policies after the permission check. A denial is 403 forbidden and
 * is audited. Platform administrators are exempt on the policies resource itself, so a tenant cannot
 * lock the platform out of repairing its policies.
 */
export async function enforcePolicies(deps: Deps, req: HttpRequest, ctx: AdminContext, permission: string, client: Pick<Client, 'authMethod'> | null): Promise<void> {
  const [, resource = '', action = ''] = permission.split(':');
  if (ctx.platform && resource === 'policies') return;
  const store = deps.store.forTenant(ctx.tenantId);
  const policies = await store.policies.applicablePolicies(resource, action);
  if (!policies.length) return;
  const d = decide(policies, { ip: req.ip, now: new Date(), strength: strengthOf(ctx.token, client) });
  if (d?.effect !== 'deny') return;
  await store.auditLog.record(ctx.actor, {
    action: 'admin_policy.deny', resourceType: resource, result: 'failure', severity: 'warn',
    metadata: { policy_id: d.policy.id, policy_name: d.policy.name, permission, method: req.method, path: req.path, request_id: req.requestId, ip: req.ip },
  }).catch((err) => deps.log.error({ err }, 'audit entry for a policy denial not written'));
  throw new Forbidden('forbidden', `Denied by admin policy "${d.policy.name}".`);
}
