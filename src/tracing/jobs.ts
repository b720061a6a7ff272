import { BullMQOtel } from 'bullmq-otel';

let telemetry: BullMQOtel | undefined;

/**
 * BullMQ's OpenTelemetry bridge (bullmq-otel): a job added inside a traced request carries that trace's
 * context in its metadata, and the consumer runs it in a span continuing it. One per process, made
 * only with tracing on.
 */
export function jobTelemetry(): BullMQOtel {
  return (telemetry ??= new BullMQOtel({ tracerName: 'svc' }));
}
