-- Issue 29 item 9: where each archived object was written.

-- The directory (relative to LOG_ARCHIVE_DIR) the catalog object was written to, recorded at write time
-- and read from ever after: changing or deleting the destination no longer moves the catalog's idea of
-- where the object is. Rows written before this column: the directory their destination names now
-- (`dest-<id>` when the destination is gone or has no directory of its own), else the default one.
alter table log_chunks add column object_dir text;
update log_chunks c set object_dir = case
    when c.destination_id is null then 'default'
    else coalesce((select coalesce(d.config->>'directory', 'dest-' || d.id) from log_destinations d where d.id = c.destination_id), 'dest-' || c.destination_id)
  end
  where c.status = 'committed';
create index log_chunks_destination on log_chunks (destination_id) where destination_id is not null;
