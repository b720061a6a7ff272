-- Locking, suspending or deleting a user ends their login sessions (the svc_session cookie): a not-before
-- mark per user on their sign-ins (`login`), beside the token marks, so sessions the per-user index never
-- saw (made before it existed) are ended too.
alter table revocation_marks drop constraint revocation_marks_subject_kind_check;
alter table revocation_marks add constraint revocation_marks_subject_kind_check check (subject_kind in ('sub', 'client', 'grant', 'login'));
