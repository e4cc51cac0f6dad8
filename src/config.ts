/** Process configuration from the environment, parsed once at the edge (zod), never read ad hoc elsewhere. */
import { loadClientConfigProfile, type ClientConfigTLS } from '@temporalio/envconfig';
import { z } from 'zod';
import { parseTimeZone } from './domain/week-id';
import { TASK_QUEUE } from './domain/names';

/** 200 USD: a first cut (video 42 + cover 3 + assembly 8) plus several reworks at 15 each. */
const DEFAULT_EPISODE_BUDGET_CENTS = 20_000;

const envSchema = z.object({
  EPISODES_CONNECT_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  EPISODES_TASK_QUEUE: z.string().min(1).default(TASK_QUEUE),
  PIPELINE_TIMEZONE: z.string().min(1).default('UTC'),
  EPISODE_BUDGET_CENTS: z.coerce.number().int().positive().default(DEFAULT_EPISODE_BUDGET_CENTS),
});

/**
 * Where and how to reach Temporal: the `temporal` CLI's own profile rules (@temporalio/envconfig): the TOML profile
 * (TEMPORAL_CONFIG_FILE, else ~/.config/temporalio/temporal.toml; TEMPORAL_PROFILE, else `default`), then the
 * TEMPORAL_* variables on top. Certificate files are read when connecting (src/temporal-connection.ts), not here.
 */
export interface TemporalSettings {
  address: string;
  namespace: string;
  /** False when neither a profile nor TEMPORAL_ADDRESS names a server (so the default localhost:7233 applies). */
  addressConfigured: boolean;
  apiKey?: string;
  tls?: ClientConfigTLS;
  grpcMeta?: Record<string, string>;
  /** Profile name and file, for messages. */
  profile: string;
  configFile?: string;
  connectTimeoutMs: number;
}

export const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';
export const DEFAULT_TEMPORAL_NAMESPACE = 'default';

export interface PipelineConfig {
  temporal: TemporalSettings;
  taskQueue: string;
  timezone: string;
  /** Per-episode cost cap in cents (EPISODE_BUDGET_CENTS). */
  budgetCents: number;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): PipelineConfig {
  const parsed = envSchema.parse(env);
  let temporal: TemporalSettings | undefined;
  return {
    // The Temporal profile (a TOML file, perhaps in a home directory this user cannot read) is loaded when something
    // connects, not before: `plan`, `list`, `show` and `verify` never need it and must not fail on it.
    get temporal(): TemporalSettings {
      return (temporal ??= loadTemporalSettings(env, parsed.EPISODES_CONNECT_TIMEOUT_MS));
    },
    set temporal(value: TemporalSettings) {
      temporal = value;
    },
    taskQueue: parsed.EPISODES_TASK_QUEUE,
    timezone: parseTimeZone(parsed.PIPELINE_TIMEZONE),
    budgetCents: parsed.EPISODE_BUDGET_CENTS,
  };
}

function loadTemporalSettings(env: NodeJS.ProcessEnv, connectTimeoutMs: number): TemporalSettings {
  // An empty variable means unset (as `VAR= cmd` is usually meant), except TEMPORAL_GRPC_META_*, where it removes.
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && (v !== '' || k.startsWith('TEMPORAL_GRPC_META_'))) vars[k] = v;
  }
  let profile;
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: vars });
  } catch (e) {
    const where = vars.TEMPORAL_CONFIG_FILE ?? 'the Temporal config file';
    throw new Error(`cannot load the Temporal profile from ${where}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const p = profileSchema.parse(profile);
  return {
    address: p.address ?? DEFAULT_TEMPORAL_ADDRESS,
    namespace: p.namespace ?? DEFAULT_TEMPORAL_NAMESPACE,
    addressConfigured: p.address !== undefined,
    apiKey: p.apiKey,
    tls: profile.tls,
    grpcMeta: p.grpcMeta,
    profile: vars.TEMPORAL_PROFILE ?? 'default',
    configFile: vars.TEMPORAL_CONFIG_FILE,
    connectTimeoutMs,
  };
}

// envconfig hands back what the TOML file said, unchecked: the fields this process relies on are checked here.
const profileSchema = z.object({
  address: z.string().min(1).optional(),
  namespace: z.string().min(1).optional(),
  apiKey: z.string().min(1).optional(),
  grpcMeta: z.record(z.string(), z.string()).optional(),
});

const port = z.coerce.number().int().min(0).max(65_535);
const demoEnvSchema = z.object({
  VENDOR_API_KEY: z.string().min(1).optional(),
  DEMO_VENDOR_PORT: port.optional(),
  EPISODES_REVIEW_LISTEN: z.preprocess(unsetIfEmpty, z.string().optional()),
  // The same variables, with the same defaults, as temporal-dev.sh, which starts the dev server the demo talks to.
  TEMPORAL_DEV_IP: z.preprocess(unsetIfEmpty, z.string().min(1).default('127.0.0.1')),
  TEMPORAL_DEV_PORT: z.preprocess(unsetIfEmpty, port.default(7233)),
  TEMPORAL_DEV_UI_PORT: z.preprocess(unsetIfEmpty, port.default(8233)),
});

/** What `npm run demo` takes besides the pipeline's own settings: the simulator's key and port, the dev server's. */
export interface DemoSettings {
  /** VENDOR_API_KEY, else the demo makes a random one. */
  vendorApiKey?: string;
  /** DEMO_VENDOR_PORT, else the simulator's default port. */
  vendorPort?: number;
  /** Where temporal-dev.sh serves the dev server (TEMPORAL_DEV_IP, TEMPORAL_DEV_PORT) and its UI (TEMPORAL_DEV_UI_PORT). */
  devServer: { address: string; uiUrl: string };
  /** EPISODES_REVIEW_LISTEN, where `--interactive` serves the review desk (else the desk's default). */
  reviewListen?: string;
}

export function loadDemoSettings(env: NodeJS.ProcessEnv = process.env): DemoSettings {
  const parsed = demoEnvSchema.parse({ ...env, VENDOR_API_KEY: env.VENDOR_API_KEY || undefined });
  const ip = parsed.TEMPORAL_DEV_IP;
  return {
    vendorApiKey: parsed.VENDOR_API_KEY,
    vendorPort: parsed.DEMO_VENDOR_PORT,
    reviewListen: parsed.EPISODES_REVIEW_LISTEN,
    devServer: { address: `${ip}:${parsed.TEMPORAL_DEV_PORT}`, uiUrl: `http://${ip}:${parsed.TEMPORAL_DEV_UI_PORT}` },
  };
}

/** The vendor simulator's settings (`episodes vendor-sim` and the demo): the ffmpeg it renders media with. */
export function loadSimulatorSettings(env: NodeJS.ProcessEnv = process.env): { ffmpeg?: string } {
  return { ffmpeg: z.preprocess(unsetIfEmpty, z.string().optional()).parse(env.EPISODES_SIM_FFMPEG) };
}

/** An empty variable counts as unset (`EPISODES_METRICS_ADDRESS=` turns metrics off): for z.preprocess. */
export function unsetIfEmpty(value: unknown): unknown {
  return value === '' ? undefined : value;
}
