-- Foundation: tenants. Timestamps are epoch milliseconds (bigint), as on the administration interface.
create table tenants (
  id          text primary key,
  name        text not null,
  created_at  bigint not null default (extract(epoch from clock_timestamp()) * 1000)::bigint,
  updated_at  bigint not null default (extract(epoch from clock_timestamp()) * 1000)::bigint
);
