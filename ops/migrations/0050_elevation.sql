-- Approvals and elevation (issue 12): approval requests with approver steps, the elevation grant an
-- approved request yields, the tokens minted from a grant (so revoking the grant revokes them), and
-- single-use approval artifacts. Every table carries tenant_id in its key; timestamps are epoch ms.

create table approval_requests (
  tenant_id              text not null references tenants(id) on delete cascade,
  id                     text not null,
  investigation_id       text not null,
  request_surface        text not null,
  requested_action       text not null,
  target_subject_type    text not null check (target_subject_type in ('user', 'tenant_resource', 'service_resource')),
  target_subject_id      text not null,
  resource_class         text not null,
  resource_ids           text[] not null,
  redaction_level        text not null check (redaction_level in ('summary_only', 'masked', 'raw')),
  reason_code            text not null,
  reason_note            text,
  ticket_reference       jsonb,
  reference              text,
  policy_preset          text not null,
  partial_access_allowed boolean not null default false,
  audience               text not null,
  requester_type         text not null,
  requester_id           text not null,
  requester_name         text not null,
  cancelled_at           bigint,
  status                 text not null default 'pending'
                         check (status in ('pending', 'partially_approved', 'approved', 'denied', 'cancelled', 'expired')),
  expires_at             bigint not null,
  created_at             bigint not null default now_ms(),
  updated_at             bigint not null default now_ms(),
  primary key (tenant_id, id)
);
create index approval_requests_list on approval_requests (tenant_id, created_at desc, id desc);
create index approval_requests_due on approval_requests (expires_at) where status in ('pending', 'partially_approved', 'approved');

create table approval_steps (
  tenant_id     text not null,
  request_id    text not null,
  id            text not null,
  position      integer not null,
  step_key      text not null,
  side          text not null check (side in ('admin_operator', 'customer_data_owner')),
  subject_type  text not null,
  subject_id    text,
  method        text not null check (method in ('email_otp', 'passkey', 'portal_confirm', 'reauth')),
  status        text not null default 'pending' check (status in ('pending', 'approved', 'denied', 'cancelled', 'expired')),
  expires_at    bigint not null,
  decided_by    text,
  decided_at    bigint,
  reason_code   text,
  reason_note   text,
  primary key (tenant_id, id),
  unique (tenant_id, request_id, step_key),
  foreign key (tenant_id, request_id) references approval_requests (tenant_id, id) on delete cascade
);
create index approval_steps_request on approval_steps (tenant_id, request_id, position);

create table elevation_grants (
  tenant_id             text not null,
  id                    text not null,
  request_id            text not null,
  status                text not null check (status in ('active', 'expired', 'revoked')),
  authorization_details jsonb not null,
  audience              text not null,
  expires_at            bigint not null,
  revoked_at            bigint,
  revoke_reason         text,
  created_at            bigint not null default now_ms(),
  primary key (tenant_id, id),
  -- Exactly one grant per approved request.
  unique (tenant_id, request_id),
  foreign key (tenant_id, request_id) references approval_requests (tenant_id, id) on delete cascade
);
create index elevation_grants_due on elevation_grants (expires_at) where status = 'active';

-- Every token minted from a grant (subject tokens and the access tokens exchanged for them), so that
-- revoking the grant revokes each jti through the revocation service.
create table elevation_tokens (
  tenant_id  text not null,
  grant_id   text not null,
  jti        text not null,
  kind       text not null check (kind in ('subject', 'access')),
  client_id  text not null,
  expires_at bigint not null,
  created_at bigint not null default now_ms(),
  primary key (tenant_id, jti),
  foreign key (tenant_id, grant_id) references elevation_grants (tenant_id, id) on delete cascade
);
create index elevation_tokens_grant on elevation_tokens (tenant_id, grant_id);

create table approval_artifacts (
  tenant_id    text not null,
  id           text not null,
  request_id   text not null,
  step_id      text not null,
  method       text not null,
  approver_id  text,
  issued_by    text not null,
  expires_at   bigint not null,
  consumed_at  bigint,
  created_at   bigint not null default now_ms(),
  primary key (tenant_id, id),
  foreign key (tenant_id, step_id) references approval_steps (tenant_id, id) on delete cascade
);
