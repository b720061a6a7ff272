/**
 * Every Redis key and channel of the service, in one file.
 *
 * Prefix: the `cache` connection adds config.redisPrefix (keyPrefix) to every key written here; channels
 * are not prefixed by ioredis, so `channel()` adds it. BullMQ queues live on the queue connection with
 * their own prefix (`queuePrefix`), never mixed with these keys.
 *
 * Redis Cluster: a command that names several keys needs them in one hash slot, which the part in
 * `{...}` (the hash tag) decides. Each entry says where its tag is and which multi-key command relies on
 * it. A key only ever used alone needs no tag (any slot will do); where one is present it groups the
 * keys of one owner so they can be moved or scanned together. Secrets never appear in key names: codes,
 * session ids and addresses are hashed first.
 */

/** The shard of a token id (`g<generation>:<region>:<shard>:...`, see src/tokens/jti.ts). */
export interface JtiShard { generation: number; region: string; shard: number }

export const redisKeys = {
  // --- plugins (src/plugins/health.ts) ---
  /** Cached result of a plugin's last health check, with a TTL (absent: unknown). Used alone; no tag needed. */
  pluginHealth: (pluginId: string) => `plg:health:${pluginId}`,

  // --- DPoP (src/dpop/replay.ts) ---
  /**
   * A DPoP proof's jti seen for a client (SET NX with the proof window as TTL): a second proof with the
   * same jti is a replay. Used alone (pipelined with the request's read); no tag needed. The jti is the
   * client's random value, hashed so its length and bytes never shape a key.
   */
  dpopJti: (clientId: string, jtiHash: string) => `dpop:${clientId}:${jtiHash}`,

  // --- revocation (src/tokens/revocation.ts) ---
  /**
   * Present while Redis holds the revocation record (refilled from Postgres when missing), on one Redis.
   * No tag. The revocation check reads it in one MGET with the jti key, the marks and the introspection
   * cache entry.
   */
  revocationLoaded: 'rv:loaded',
  /**
   * The same on a Redis Cluster, one per hash slot: tag `{<tag>}` is chosen to hash to the slot it guards
   * (src/tokens/revocation-sentinels.ts), so the check reads it in the same MGET part as the keys of that
   * slot, and a master that is down or lost its data refuses only the tokens whose keys it holds.
   */
  revocationLoadedSlot: (tag: string) => `rv:loaded:{${tag}}`,
  /** Lock so one process refills at a time (SET NX). No tag: used alone. */
  revocationRefillLock: 'rv:refilling',
  /** A revoked token id. Tag `{g<generation>:<region>:<shard>}`: one slot per revocation shard, so a refill pipeline and a shard's keys stay together. */
  revokedJti: (s: JtiShard, jti: string) => `rv:{g${s.generation}:${s.region}:${s.shard}}:${jti}`,
  /**
   * Not-before mark of a user (`sub`), a client, one user at one client (`grant`, id `<sub> <client>`), or a
   * user's sign-ins (`login`: their login sessions). Tag `{t:<tenant>}`: a tenant's marks share a slot.
   */
  revocationMark: (tenant: string, kind: 'sub' | 'client' | 'grant' | 'login', id: string) => `rvm:{t:${tenant}}:${kind}:${id}`,
  /**
   * Present while a tenant is suspended, being deleted or deleted (value: its status): every token of the
   * tenant is refused. Read in the revocation check's MGET; tag `{t:<tenant>}` as the marks, so it shares
   * their slot. Durable in Postgres as tenants.status and refilled with the marks (src/tokens/revocation.ts).
   */
  tenantSuspended: (tenant: string) => `rvm:{t:${tenant}}:tenant-suspended`,

  // --- token endpoints ---
  /**
   * Cached introspection answer with the kid that verified it, "<kid> <answer>" (src/oauth/introspect.ts).
   * Tag `{<resource server client id>}`. Prefix `ik:` since the kid was added (was `ic:`, the bare answer),
   * so processes of either version never read each other's entries during a rolling deploy.
   */
  introspection: (clientId: string, tokenHash: string) => `ik:{${clientId}}:${tokenHash}`,
  /** A client assertion's jti, against replay (src/clients/authenticate.ts, SET NX). Tag `{<client id>}`. */
  clientAssertion: (clientId: string, jti: string) => `ca:{${clientId}}:${jti}`,

  // --- login (src/login/*) ---
  // A login step's keys belong to different owners (the interaction by its id, the address's code and
  // windows by its hash, the client IP's windows, the tenant's suspension mark under `{t:<tenant>}`), so
  // no one slot can hold them: a step sends them together instead (one write, auto-pipelined; on a
  // Cluster one to each node at once), one round trip per dependency (test/login/redis-round-trips.test.ts).
  /** One-time email code: hash with attempts, tenant, client. Every access is one script on this one key (store, attempt-and-compare, restore, drop-if-ours). No tag needed. */
  otp: (emailHash: string) => `otp:${emailHash}`,
  /** Dynamic client registrations per tenant and source address (src/oauth/register.ts, rate-limit script). Used alone; no tag needed. */
  registrationRate: (tenant: string, ip: string) => `rl:reg:${tenant}:${ip}`,
  /** Code requests per address (rate-limit script, one key per call). No tag needed. */
  rateAddress: (emailHash: string) => `rl:otp:addr:${emailHash}`,
  /** Code requests per client IP (rate-limit script, one key per call). No tag needed. */
  rateIp: (ip: string) => `rl:otp:ip:${ip}`,
  /** Failed code verifications per address / per client IP (failure budget, src/store/rate-limit.ts). No tag needed. */
  otpFailAddress: (emailHash: string) => `bf:otp:addr:${emailHash}`,
  otpFailIp: (ip: string) => `bf:otp:ip:${ip}`,
  /**
   * Failed client secret checks per client id and client address (failure budget, src/clients/secret-failures.ts),
   * the client's failing addresses (a HyperLogLog) and the mark of the window's `security.alert`. Tag
   * `{<client id>}` (braces in the id escaped) on all three: one script counts a failure in all of them.
   * The budget is also read in the revocation check's MGET, which is split per slot anyway.
   */
  clientAuthFail: (clientId: string, address: string) => `bf:client:{${clientId}}:${address}`,
  clientAuthFailSources: (clientId: string) => `bf:client-src:{${clientId}}`,
  clientAuthFailAlerted: (clientId: string) => `bf:client-alert:{${clientId}}`,
  /** Unknown or invalid check API keys per client IP (failure budget). No tag needed. */
  checkKeyFailIp: (ip: string) => `bf:ck:ip:${ip}`,
  /** A pending authorization request while the user signs in. Used alone (written with the tenant check, read with a step's rate windows or failure budgets); no tag needed. */
  interaction: (id: string) => `ia:${id}`,
  /** A login session, under the hash of its cookie value. Used alone; no tag needed. */
  session: (sidHash: string) => `sess:${sidHash}`,
  /**
   * A user's login sessions (src/login/user-session-index.ts): a sorted set of their session keys' hashes
   * scored by expiry (epoch s). Every command on it names it alone (the session keys sit in other slots
   * and are touched by commands of their own), so no tag. Tenant ids have no ':', so the purge's prefix is exact.
   */
  userLoginSessions: (tenant: string, userId: string) => `lsu:${tenant}:${userId}`,
  /**
   * Authorization code record and its redemption state. Tag `{<code hash>}` on all four: redeeming reads
   * the record, claims `:used` and reads `:issued` in one MULTI, and recording what was issued writes
   * `:issued` and reads `:replayed` in another, so the four must share a slot.
   */
  authCode: (codeHash: string) => `ac:{${codeHash}}`,
  /** A pushed authorization request (RFC 9126), by the hash of its request_uri, for 60 s or until its code is issued. Used alone; no tag needed. */
  pushedRequest: (uriHash: string) => `par:${uriHash}`,
  authCodeUsed: (codeHash: string) => `ac:{${codeHash}}:used`,
  authCodeIssued: (codeHash: string) => `ac:{${codeHash}}:issued`,
  authCodeReplayed: (codeHash: string) => `ac:{${codeHash}}:replayed`,
  /** Cached consent (scopes) of a user to a client. Used alone; no tag needed. */
  consent: (tenant: string, userId: string, clientId: string) => `consent:${tenant}:${userId}:${clientId}`,

  // --- device authorization grant (src/device/store.ts, RFC 8628) ---
  /**
   * A device authorization under the hash of its device code: a hash with tenant `t`, client, scope,
   * user code, expiry, interval, last poll, state and (once approved) the user. Every read and change is
   * one command or script on this key alone (poll, entry, decision), so it needs no tag.
   */
  deviceAuthorization: (deviceCodeHash: string) => `dev:${deviceCodeHash}`,
  /** The device code hash a user code names, under the hash of the user code (SET NX: live codes are unique). Read alone; no tag needed. */
  deviceUserCode: (userCodeHash: string) => `devuc:${userCodeHash}`,
  /** Device authorizations started per client and client address (rate-limit script, one key per call). Tag `{<client id>}` as the client's other keys. */
  deviceAuthorizationRate: (clientId: string, ip: string) => `rl:dev:{${clientId}}:${ip}`,
  /** Wrong user codes entered per client address (failure budget, src/store/rate-limit.ts). No tag needed. */
  deviceEntryFailIp: (ip: string) => `bf:dev:ip:${ip}`,

  /** A WebAuthn challenge and what it was issued for (src/account/passkeys/webauthn.ts, SET EX then GETDEL). Used alone; no tag needed. */
  webauthnChallenge: (challenge: string) => `wa:${challenge}`,

  // --- approvals (src/elevation/artifacts.ts) ---
  /** The step-up code of an approval artifact, bound to the artifact and its approver (hash and attempts). Used alone; tag `{t:<tenant>}` groups a tenant's codes. */
  approvalCode: (tenant: string, artifactId: string, approverId: string) => `apc:{t:${tenant}}:${artifactId}:${approverId}`,

  // --- check API (src/check/rate-limit.ts) ---
  /** Checks counted in one minute window for one API key (INCRBY+PEXPIRE MULTI on this key). Tag `{<key id>}`: a key's windows share a slot. */
  checkRate: (keyId: string, window: number) => `ck:rl:{${keyId}}:${window}`,

  // --- background work ---
  /**
   * Whether a key (before the keyPrefix) belongs to one tenant by its name, for the tenant's purge
   * (src/tenants/purge.ts): its marks and approval codes (tag `{t:<tenant>}`), its consent cache, the
   * introspection cache (`ik:`, and `ic:` entries of the version before), client-assertion jtis, device-authorization rate windows and failure budget of its clients, the rate windows of
   * its check API keys, and the revocation entries of its tokens (their keys given). The purge writes
   * the suspension mark again afterwards: a deleted tenant's tokens stay refused.
   */
  tenantOwns: (o: { tenant: string; clientIds: ReadonlySet<string>; checkKeyIds: ReadonlySet<string>; revokedJtiKeys: ReadonlySet<string> }) => (key: string): boolean => {
    if (key.startsWith(`rvm:{t:${o.tenant}}:`) || key.startsWith(`apc:{t:${o.tenant}}:`) || key.startsWith(`consent:${o.tenant}:`) || key.startsWith(`lsu:${o.tenant}:`)) return true;
    const tagged = /^(ik|ic|ca|ck:rl|rl:dev):\{([^}]*)\}:/.exec(key);
    if (tagged) return (tagged[1] === 'ck:rl' ? o.checkKeyIds : o.clientIds).has(tagged[2]!);
    if (key.startsWith('bf:client:')) return o.clientIds.has(key.slice('bf:client:'.length)); // clientAuthFail (ids over 200 characters are cut there)
    return o.revokedJtiKeys.has(key);
  },
  /**
   * Keys that name their tenant only in their value (the purge reads them): sessions, sign-in
   * interactions, WebAuthn challenges (JSON with `tenantId`, an interaction's under `request`), one-time
   * codes and device authorizations (hash field `t`), authorization code records (JSON `tenantId`; their
   * `:used`, `:issued` and `:replayed` companions go with them). A device authorization's user-code key
   * holds only a hash and expires with the code, so it is left to expire.
   */
  tenantValueKeys: [
    { prefix: 'sess:', read: 'json' }, { prefix: 'ia:', read: 'json' }, { prefix: 'wa:', read: 'json' },
    { prefix: 'otp:', read: 'hash-t' }, { prefix: 'ac:{', read: 'json' }, { prefix: 'dev:', read: 'hash-t' },
  ] as ReadonlyArray<{ prefix: string; read: 'json' | 'hash-t' }>,
  /** The companions of an authorization code record (same tag): deleted with it. */
  authCodeCompanions: (recordKey: string) => [`${recordKey}:used`, `${recordKey}:issued`, `${recordKey}:replayed`],

  // --- log usage (src/logging/usage/) ---
  /**
   * Log usage counters of one UTC minute (epoch ms of its start): a hash, field
   * `<tenant>\t<tenant_key>\t<log_type>\t<plane>\t<lane>\t<metric>` (a tenant's purge deletes its
   * fields; the rollup those of any tombstoned tenant). Tag `{logusage}` on it and on
   * `logUsageMinutes`: a meter flush is one pipeline of HINCRBYs, ZADD and PEXPIRE over both, and
   * the rollup reads both, so they share a slot (one slot for all usage: a minute hash is small).
   */
  logUsageMinute: (minute: number) => `lu:{logusage}:m:${minute}`,
  /** The minutes that have a counter hash (sorted set, score = minute). Tag `{logusage}` as above. */
  logUsageMinutes: 'lu:{logusage}:minutes',

  /** The primary's WAL position after the last admin change (src/store/replica.ts): admin reads wait for the replica to pass it. Used alone; no tag. */
  replicaFence: 'replica:fence',
} as const;

/** The login keys, by their old name (src/login/keys.ts re-exports them). */
export const loginKeys = {
  otp: redisKeys.otp, rateAddress: redisKeys.rateAddress, rateIp: redisKeys.rateIp, interaction: redisKeys.interaction,
  otpFailAddress: redisKeys.otpFailAddress, otpFailIp: redisKeys.otpFailIp,
  session: redisKeys.session, authCode: redisKeys.authCode, authCodeUsed: redisKeys.authCodeUsed,
  authCodeIssued: redisKeys.authCodeIssued, authCodeReplayed: redisKeys.authCodeReplayed, consent: redisKeys.consent,
} as const;

/** Pub/sub channels (on the `subscriber` connection; publish from any other). */
export const redisChannels = {
  /** A client record changed: evict it from every process's cache (src/clients/cache.ts). */
  clientsChanged: 'clients:changed',
  /** The signing key ring changed (`svc keys rotate`): reload it (src/services.ts). */
  keysChanged: 'keys:changed',
  /** A tenant's settings or display name changed: evict it from every process's cache (src/tenants/settings-cache.ts). */
  tenantsChanged: 'tenants:changed',
  /** A tenant switched a plugin on or off: evict it from every process's cache (src/plugins/switches.ts). */
  pluginsChanged: 'plugins:changed',
  /** A tenant's resource servers changed: evict them from every process's cache (src/resources/cache.ts). */
  resourceServersChanged: 'resource-servers:changed',
  /** A quota evaluation changed what is enforced: every process refreshes its log admission (src/logging/quota/admission.ts). */
  logEnforcementChanged: 'logging:enforcement',
} as const;

/** A channel name as published and subscribed: ioredis does not apply keyPrefix to channels. */
export function channel(config: { redisPrefix: string }, name: string): string {
  return config.redisPrefix + name;
}

/**
 * BullMQ prefix from config.redisPrefix ("svc:" -> "{svc}"), so tests and deployments sharing a Redis
 * stay apart. In braces, as BullMQ requires on Redis Cluster: its scripts name several keys of a queue
 * (`<prefix>:<queue>:wait`, `...:active`, ...), and the tag puts every queue of the deployment in one slot.
 */
export function queuePrefix(config: { redisPrefix: string }): string {
  return `{${config.redisPrefix.replace(/:+$/, '') || 'svc'}}`;
}

/** Keys on the queue connection (no keyPrefix; the queue prefix is part of the key). */
export const queueKeys = {
  /** The outbox relay's marker that the queue holds what the outbox says it does (src/events/relay.ts). Used alone; the queue prefix's tag puts it with the queues. */
  relaySentinel: (config: { redisPrefix: string }) => `${queuePrefix(config)}:webhooks:relay-sentinel`,
} as const;

// The fields of a usage minute hash (redisKeys.logUsageMinute): written by the meter, read by the rollup,
// and found by tenant (the first part) by the tenant purge.
const SEP = '\t';

/** The field of a counter in its minute hash (see redisKeys.logUsageMinute). */
export function counterField(tenantId: string, tenantKey: string, logType: string, plane: string, lane: string, metric: string): string {
  return [tenantId, tenantKey, logType, plane, lane, metric].join(SEP);
}
export function parseField(f: string): { tenant_id: string; tenant_key: string; log_type: string; plane: string; lane: string; metric_name: string } | null {
  const p = f.split(SEP);
  if (p.length !== 6) return null;
  return { tenant_id: p[0]!, tenant_key: p[1]!, log_type: p[2]!, plane: p[3]!, lane: p[4]!, metric_name: p[5]! };
}
/** The tenant a usage counter field counts for. */
export function tenantOfCounterField(f: string): string { return f.slice(0, f.indexOf(SEP)); }
