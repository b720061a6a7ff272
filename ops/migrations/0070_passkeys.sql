-- Passkeys (WebAuthn credentials) of end users, one tenant each. The credential id is unique within a
-- tenant (a sign-in looks it up there); the public key is the COSE key as the authenticator sent it.
create table passkeys (
  id              text primary key,
  tenant_id       text not null references tenants(id) on delete cascade,
  user_id         text not null references users(id) on delete cascade,
  credential_id   text not null,            -- base64url, as WebAuthn names it
  public_key      bytea not null,           -- COSE_Key
  counter         bigint not null default 0,
  transports      text[] not null default '{}',
  backup_eligible boolean not null default false,
  backed_up       boolean not null default false,
  aaguid          text,                     -- display only, never a trust input; null when all zero
  device_name     text,
  created_at      bigint not null default now_ms(),
  last_used_at    bigint
);
create unique index passkeys_tenant_credential on passkeys (tenant_id, credential_id);
create index passkeys_user on passkeys (tenant_id, user_id, created_at);

-- Revoking a consent cuts the tokens of one user at one client: a not-before mark per grant (user and
-- client together), beside the existing per-user and per-client marks.
alter table revocation_marks drop constraint revocation_marks_subject_kind_check;
alter table revocation_marks add constraint revocation_marks_subject_kind_check check (subject_kind in ('sub', 'client', 'grant'));

-- The account page's "recent activity": a user's own events from the outbox, newest first.
create index event_outbox_user on event_outbox (tenant_id, (data->>'user_id'), id desc);
