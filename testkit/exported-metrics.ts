/**
 * The metric names a worker's /metrics serves, for checking the alert rules and the dashboard against: the business
 * counters from `MetricName` (the exporter appends `_total`), the state and cluster gauges from `GaugeName` and `ClusterGaugeName`, the ledger check's `LedgerMetricName` (written by
 * `episodes ledger --metrics-file`, checked in test/integration/workflows/production.test.ts), and the SDK families a real worker serves after one
 * episode (worker-telemetry.test.ts checks each is on a real worker's /metrics).
 */
import { MetricName } from '../src/activities/metrics';
import { LedgerMetricName } from '../src/cli/ledger-commands';
import { ClusterGaugeName } from '../src/process/cluster-metrics';
import { GaugeName } from '../src/process/state-metrics';

export const SDK_FAMILIES = {
  counter: [
    'temporal_activity_execution_failed_total',
    'temporal_activity_task_received_total',
    'temporal_request_total',
    'temporal_worker_start_total',
    'temporal_workflow_completed_total',
    'temporal_workflow_task_queue_poll_succeed_total',
  ],
  gauge: ['temporal_num_pollers', 'temporal_worker_task_slots_available', 'temporal_worker_task_slots_used'],
  histogram: [
    'temporal_activity_execution_latency_seconds',
    'temporal_activity_schedule_to_start_latency_seconds',
    'temporal_workflow_endtoend_latency_seconds',
    'temporal_workflow_task_schedule_to_start_latency_seconds',
  ],
} as const;

/** Series names: a histogram family serves `_bucket`, `_sum` and `_count`. */
export function exportedNames(): Set<string> {
  return new Set([
    ...Object.values(MetricName).map((n) => `${n}_total`),
    ...Object.values(GaugeName),
    ...Object.values(ClusterGaugeName),
    ...Object.values(LedgerMetricName),
    ...SDK_FAMILIES.counter,
    ...SDK_FAMILIES.gauge,
    ...SDK_FAMILIES.histogram.flatMap((h) => [`${h}_bucket`, `${h}_sum`, `${h}_count`]),
  ]);
}

/** The metric names a PromQL expression reads (ours all start `episodes_` or `temporal_`); quoted values skipped. */
export function metricNamesIn(expr: string): string[] {
  const unquoted = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...new Set(unquoted.match(/\b(?:episodes|temporal)_[a-zA-Z0-9_:]*/g) ?? [])];
}
