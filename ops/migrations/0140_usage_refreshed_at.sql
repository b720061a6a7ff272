-- Issue 29 item 17: a usage window says when the rollup last recomputed it (`refreshed_at`), apart from
-- when its value last changed (`updated_at`). Rows written before this migration were refreshed when
-- they were last updated.
alter table log_usage_aggregates add column refreshed_at bigint;
update log_usage_aggregates set refreshed_at = updated_at;
alter table log_usage_aggregates alter column refreshed_at set not null, alter column refreshed_at set default now_ms();
