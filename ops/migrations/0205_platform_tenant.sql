-- Issue 33: the people of a platform tenant administer every tenant (the console's operators sign in as
-- people, not as the platform administrator client). Set by `svc bootstrap` for the default tenant (or
-- a tenant bootstrapped as platform); never by the admin API.
alter table tenants add column platform boolean not null default false;
