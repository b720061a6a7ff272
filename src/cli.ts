#!/usr/bin/env node
import { loadConfig, ConfigError, keyMaterialWriteRefusal } from './config.js';
import { createSql } from './sql.js';

const USAGE = `usage: svc <command>
  start              run the service (supervisor, HTTP processes, queue workers); NODE_ENV defaults to production
  migrate            apply pending database migrations
  bootstrap [--json] create the default tenant, platform administrator and demo clients (idempotent;
                     prints fresh secrets for the bootstrap clients each run)
  admin token [--tenant ID] [--ttl SECONDS]
                     mint a platform administrator access token
  keys rotate        publish a new signing key, retire the active one (kept until its tokens expire);
                     --tenant ID rotates that tenant's own keys (its signing_algs) instead
  clients create --tenant ID --name NAME --grant-types a,b [--scopes a,b] [--audiences a,b]
                 [--access-token-ttl S] [--introspect] [--audience AUD] [--strict] [--json]
                     register a client; prints its id and secret once
Other commands than start default NODE_ENV to development. bootstrap, keys rotate, clients create (and migrate,
when it has users from before migration 0110 to seal) write material under KEY_ENCRYPTION_KEY: without that
variable they refuse unless NODE_ENV=development (or test) is set explicitly.`;

async function run(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === 'start') {
    // An unconfigured deployment must not answer X-Debug stack traces or run on the development key:
    // the server defaults to production; `npm start` (ops/run.mjs) asks for development explicitly.
    process.env.NODE_ENV ||= 'production';
    const { main } = await import('./main.js');
    await main();
    return -1; // keep running
  }
  let config;
  try { config = loadConfig(); } catch (err) {
    if (err instanceof ConfigError) { console.error(err.message); return 2; }
    throw err;
  }
  // Checked before anything is opened: a refused command writes nothing.
  const refusal = keyMaterialWriteRefusal(config);
  if (refusal && (cmd === 'bootstrap' || (cmd === 'keys' && rest[0] === 'rotate') || (cmd === 'clients' && rest[0] === 'create'))) {
    console.error(`svc ${cmd}${cmd === 'bootstrap' ? '' : ` ${rest[0]}`}: ${refusal}`);
    return 2;
  }
  if (cmd === 'migrate') {
    const sql = createSql(config, { max: 1 });
    try {
      const { migrate } = await import('./store/migrate.js');
      const r = await migrate(sql);
      console.log(r.applied.length ? `applied ${r.applied.join(', ')}` : `up to date (${r.skipped} migrations)`);
      // Personal data: partitions created, rows from before migration 0110 sealed (src/pii/).
      const { PiiVault } = await import('./pii/vault.js');
      const { sealLegacyUsers } = await import('./pii/legacy.js');
      const { hasLegacyUsers } = await import('./cross-tenant/pii.js');
      const { followLookupKeys } = await import('./pii/lookup-keys/wiring.js');
      const { createLogger } = await import('./log.js');
      const vault = PiiVault.fromConfig(config, sql);
      try {
        // Legacy rows are indexed under the keys of the lookup-key rotation's current state (read once).
        await followLookupKeys({ config, sql, redis: null, vault, role: 'migrate', log: createLogger(config.logLevel) }).refresh();
        await vault.partitions.ensure();
        // Sealing creates tenant data keys under KEY_ENCRYPTION_KEY: only with a key that is meant.
        if (refusal && (await hasLegacyUsers(sql))) {
          console.error(`svc migrate: migrations applied, but users written before migration 0110 are not sealed: ${refusal}`);
          return 2;
        }
        const sealed = await sealLegacyUsers(sql, vault);
        if (sealed) console.log(`sealed the personal data of ${sealed} users`);
      } finally { await vault.close(); }
      return 0;
    } finally { await sql.end({ timeout: 5 }); }
  }
  if (cmd === 'bootstrap') {
    const sql = createSql(config, { max: 2 });
    try {
      const { bootstrap } = await import('./bootstrap.js');
      const result = await bootstrap(config, sql);
      if (rest.includes('--json')) console.log(JSON.stringify(result, null, 2));
      else console.log(`tenant ${result.tenant_id} ready at ${result.issuer}`);
      return 0;
    } finally { await sql.end({ timeout: 5 }); }
  }
  if (cmd === 'admin' && rest[0] === 'token') {
    const sql = createSql(config, { max: 2 });
    try {
      const { mintAdminToken } = await import('./bootstrap.js');
      const tenant = flag(rest, '--tenant') ?? 'default';
      console.log(await mintAdminToken(config, sql, tenant, tenant === 'default', Number(flag(rest, '--ttl') ?? 3600)));
      return 0;
    } finally { await sql.end({ timeout: 5 }); }
  }
  if (cmd === 'keys' && rest[0] === 'rotate') {
    const sql = createSql(config, { max: 2 });
    try {
      const { rotateKeys, KEY_VERIFY_WINDOW_SECONDS } = await import('./tokens/keys.js');
      const { rotateTenantKeys } = await import('./tokens/tenant-keys.js');
      const tenant = flag(rest, '--tenant');
      // --tenant: that tenant's own keys (each algorithm of its signing_algs); otherwise the deployment's.
      const r = tenant !== undefined ? await rotateTenantKeys(sql, config.keyEncryptionKey, tenant)
        : await rotateKeys(sql, config.keyEncryptionKey, config.tokenSigningAlg, KEY_VERIFY_WINDOW_SECONDS);
      await notifyKeys(config);
      console.log(JSON.stringify(r));
      return 0;
    } finally { await sql.end({ timeout: 5 }); }
  }
  if (cmd === 'clients' && rest[0] === 'create') {
    const sql = createSql(config, { max: 2 });
    try {
      const { createClient } = await import('./clients/create.js');
      const { deriveKey } = await import('./tokens/secrets.js');
      const list = (f: string) => (flag(rest, f) ?? '').split(',').filter(Boolean);
      const tenantId = flag(rest, '--tenant') ?? 'default';
      const ttl = flag(rest, '--access-token-ttl');
      const { client, clientSecret } = await createClient(sql, deriveKey(config.keyEncryptionKey, 'client-secrets'), {
        tenantId, name: flag(rest, '--name') ?? 'client', grantTypes: list('--grant-types'), scopes: list('--scopes'),
        allowedAudiences: list('--audiences'), accessTokenTtl: ttl ? Number(ttl) : null, canIntrospect: rest.includes('--introspect'),
        audience: flag(rest, '--audience') ?? null, strictValidation: rest.includes('--strict'), redirectUris: list('--redirect-uris'),
      });
      const out = { client_id: client.clientId, client_secret: clientSecret, tenant_id: tenantId };
      console.log(rest.includes('--json') ? JSON.stringify(out) : `client_id=${out.client_id}\nclient_secret=${out.client_secret}`);
      return 0;
    } finally { await sql.end({ timeout: 5 }); }
  }
  console.error(USAGE);
  return cmd === undefined || cmd === 'help' || cmd === '--help' ? 0 : 2;
}

// Cluster workers re-run this file with the primary's argv ("start"), and SVC_ROLE picks their role in main().
run(process.argv.slice(2)).then((code) => {
  if (code >= 0) process.exit(code);
}, (err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

/** Tells running HTTP processes to reload their key ring (they also reload every minute). */
async function notifyKeys(config: import('./config.js').Config): Promise<void> {
  const { createRedis } = await import('./store/redis.js');
  const { channel, redisChannels } = await import('./store/redis-keys.js');
  const r = createRedis(config, 'admin');
  try { await r.connect(); await r.publish(channel(config, redisChannels.keysChanged), 'rotated'); } catch { /* processes reload on their timer */ } finally { r.disconnect(); }
}
