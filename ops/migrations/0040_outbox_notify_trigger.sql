-- The relay is woken by a NOTIFY at commit. It used to be a separate `select pg_notify` after every
-- outbox insert (one more round trip per event); a statement-level trigger sends it as part of the
-- insert itself. Postgres folds identical notifications of one transaction into one.
create function svc_outbox_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_outbox', '');
  return null;
end $$;

create trigger event_outbox_notify after insert on event_outbox
  for each statement execute function svc_outbox_notify();
