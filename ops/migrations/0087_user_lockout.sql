-- Issue 21 item 10: users locked after repeated failed sign-ins, per tenant setting (0 = never).
alter table users add column failed_logins integer not null default 0;
create table tenant_login_lockout (
  tenant_id          text primary key references tenants (id) on delete cascade,
  max_failed_logins  integer not null check (max_failed_logins between 0 and 1000),
  updated_at         bigint not null default now_ms()
);
