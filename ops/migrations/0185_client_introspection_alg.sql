-- Issue 31 item 4: a client registered with introspection_signed_response_alg (RFC 9701 6) always gets
-- signed introspection answers.
alter table clients add column introspection_signed_response_alg text;
