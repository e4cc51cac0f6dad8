/**
 * The worker process's telemetry: one SDK Runtime, installed before any connection exists, with the process logger
 * (readable text or one JSON object per line, EPISODES_LOG_FORMAT) and, when EPISODES_METRICS_ADDRESS is set, the
 * SDK's Prometheus exporter. Activities add business metrics through the same runtime (see activities/metrics.ts).
 */
import { formatWithOptions } from 'node:util';
import { DefaultLogger, Runtime, type LogEntry, type LogLevel, type Logger } from '@temporalio/worker';
import { episodeIdOfWorkflowId } from '../domain/names';
import { readSettings } from '../settings/read';

export type LogFormat = 'text' | 'json';

export interface TelemetryConfig {
  /** Prometheus scrape address (`/metrics`); undefined = no metrics. */
  metricsAddress: string | undefined;
  logFormat: LogFormat;
  logLevel: LogLevel;
}

export function loadTelemetryConfig(env: NodeJS.ProcessEnv = process.env): TelemetryConfig {
  const parsed = readSettings(['EPISODES_METRICS_ADDRESS', 'EPISODES_LOG_FORMAT', 'EPISODES_LOG_LEVEL'], env);
  return {
    metricsAddress: parsed.EPISODES_METRICS_ADDRESS,
    logFormat: parsed.EPISODES_LOG_FORMAT,
    logLevel: parsed.EPISODES_LOG_LEVEL,
  };
}

/**
 * Installs the Runtime (once per process, before the first NativeConnection: the SDK refuses a second install) and
 * returns the logger the process's own output goes through. Native (core) logs are forwarded to the same logger.
 */
export function installTelemetry(config: TelemetryConfig): Logger {
  const logger = createLogger(config.logFormat, config.logLevel);
  Runtime.install({
    logger,
    telemetryOptions: {
      logging: { forward: {}, filter: { core: 'WARN', other: 'ERROR' } },
      ...(config.metricsAddress ? { metrics: prometheusExporter(config.metricsAddress) } : {}),
    },
  });
  return logger;
}

/**
 * Prometheus conventions, so `promtool check metrics` passes on /metrics: counters end in `_total`, histograms carry
 * their unit and measure seconds (`temporal_activity_execution_latency_seconds`).
 */
export function prometheusExporter(bindAddress: string) {
  return {
    prometheus: { bindAddress, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true },
  } as const;
}

/** Logs go to stdout, one line per entry; stderr stays for the one-line fatal error of a failed start. */
export function createLogger(
  format: LogFormat,
  level: LogLevel,
  write: (line: string) => unknown = (line) => process.stdout.write(line),
): Logger {
  return new DefaultLogger(level, (entry) => write(format === 'json' ? jsonLine(entry) : textLine(entry)));
}

const render = formatWithOptions.bind(undefined, { colors: false, breakLength: Infinity, depth: 4 });

function textLine({ level, message, meta, timestampNanos }: LogEntry): string {
  const time = new Date(Number(timestampNanos / 1_000_000n)).toISOString();
  return meta === undefined ? `${time} [${level}] ${message}\n` : `${time} [${level}] ${message} ${render(meta)}\n`;
}

/**
 * One JSON object per line: time, level, message, then the correlation fields under stable snake_case names
 * (workflow_id, episode_id, activity_type, ...) and the rest of the SDK's metadata as it came.
 */
export function jsonLine({ level, message, meta = {}, timestampNanos }: LogEntry): string {
  const {
    workflowId,
    episodeId,
    activityType,
    workflowType,
    runId,
    workflowRunId,
    taskQueue,
    namespace,
    sdkComponent,
    ...rest
  } = meta;
  const workflow = typeof workflowId === 'string' ? workflowId : undefined;
  const record: Record<string, unknown> = {
    ts: new Date(Number(timestampNanos / 1_000_000n)).toISOString(),
    level,
    message,
    component: sdkComponent,
    workflow_id: workflow,
    run_id: runId ?? workflowRunId,
    workflow_type: workflowType,
    activity_type: activityType,
    // Workflow IDs carry the episode (`episode-<id>-...`): SDK lines of a production get their episode too.
    episode_id: episodeId ?? (workflow ? episodeIdOfWorkflowId(workflow) : undefined),
    task_queue: taskQueue,
    namespace,
  };
  for (const [key, value] of Object.entries(rest)) record[key] = value;
  return `${safeStringify(record)}\n`;
}

function safeStringify(record: Record<string, unknown>): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(record, (_key, value: unknown) => {
    if (typeof value === 'bigint') return value.toString();
    if (value instanceof Error) {
      const { name, message, stack } = value;
      const extra = Object.fromEntries(Object.entries(value));
      return { ...extra, name, message, stack };
    }
    if (typeof value === 'object' && value !== null) {
      if (seen.has(value)) return '[circular]';
      seen.add(value);
    }
    return value;
  });
}
