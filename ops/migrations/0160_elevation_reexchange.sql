-- Issue 29 item 1: an access token exchanged from an elevation grant is not exchangeable again unless its
-- request says so (default: refused with invalid_grant).
alter table approval_requests add column allow_reexchange boolean not null default false;
