-- Issue 34: the W3C trace context (traceparent) of the request that caused an event, carried from the
-- outbox to each webhook delivery, so the delivery continues that trace and sends it to the receiver.
-- Null when tracing is off or the change was not part of a sampled trace.
alter table event_outbox add column trace_context text;
alter table webhook_deliveries add column trace_context text;
