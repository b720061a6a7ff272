-- End-user login (issue 5): consents of users to clients. One-time codes, sessions and authorization
-- codes live in Redis only (short-lived); users already exist (0003_users.sql).
alter table users add column last_login_at bigint;

create table consents (
  id                     text primary key,
  tenant_id              text not null references tenants(id) on delete cascade,
  user_id                text not null references users(id) on delete cascade,
  client_id              text not null references clients(client_id) on delete cascade,
  scopes                 text[] not null,
  selected_scopes        text[],
  granted_at             bigint not null default now_ms(),
  expires_at             bigint,
  privacy_policy_version text,
  tos_version            text,
  consent_version        integer
);
create unique index consents_tenant_user_client on consents (tenant_id, user_id, client_id);
