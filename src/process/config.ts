/** Process configuration from the environment, read once at the edge by the settings table's rules. */
import { loadClientConfigProfile, type ClientConfigTLS } from '@temporalio/envconfig';
import { z } from 'zod';
import { parseTimeZone } from '../domain/week-id';
import { readSettings } from '../settings/read';

/**
 * Where and how to reach Temporal: the `temporal` CLI's own profile rules (@temporalio/envconfig): the TOML profile
 * (TEMPORAL_CONFIG_FILE, else ~/.config/temporalio/temporal.toml; TEMPORAL_PROFILE, else `default`), then the
 * TEMPORAL_* variables on top. Certificate files are read when connecting (temporal-connection.ts), not here.
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
  /** Per-episode cost cap in cents (EPISODES_BUDGET_CENTS). */
  budgetCents: number;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): PipelineConfig {
  const parsed = readSettings(
    ['EPISODES_CONNECT_TIMEOUT_MS', 'EPISODES_TASK_QUEUE', 'EPISODES_TIMEZONE', 'EPISODES_BUDGET_CENTS'],
    env,
  );
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
    timezone: parseTimeZone(parsed.EPISODES_TIMEZONE),
    budgetCents: parsed.EPISODES_BUDGET_CENTS,
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

/** What `npm run demo` takes besides the pipeline's own settings: the simulator's key and port, the dev server's. */
export interface DemoSettings {
  /** EPISODES_VENDOR_API_KEY, else the demo makes a random one. */
  vendorApiKey?: string;
  /** EPISODES_DEMO_VENDOR_PORT. */
  vendorPort: number;
  /** Where temporal-dev.sh serves the dev server and its UI (EPISODES_DEV_SERVER_IP, _PORT, _UI_PORT). */
  devServer: { address: string; uiUrl: string };
  /** EPISODES_REVIEW_LISTEN, where `--interactive` serves the review desk. */
  reviewListen: string;
}

export function loadDemoSettings(env: NodeJS.ProcessEnv = process.env): DemoSettings {
  const s = readSettings(
    [
      'EPISODES_VENDOR_API_KEY',
      'EPISODES_DEMO_VENDOR_PORT',
      'EPISODES_DEV_SERVER_IP',
      'EPISODES_DEV_SERVER_PORT',
      'EPISODES_DEV_SERVER_UI_PORT',
      'EPISODES_REVIEW_LISTEN',
    ],
    env,
  );
  const ip = s.EPISODES_DEV_SERVER_IP;
  return {
    vendorApiKey: s.EPISODES_VENDOR_API_KEY,
    vendorPort: s.EPISODES_DEMO_VENDOR_PORT,
    devServer: {
      address: `${ip}:${s.EPISODES_DEV_SERVER_PORT}`,
      uiUrl: `http://${ip}:${s.EPISODES_DEV_SERVER_UI_PORT}`,
    },
    reviewListen: s.EPISODES_REVIEW_LISTEN,
  };
}

/** The vendor simulator's settings (`episodes vendor-sim` and the demo): the ffmpeg it renders media with. */
export function loadSimulatorSettings(env: NodeJS.ProcessEnv = process.env): { ffmpeg: string } {
  return { ffmpeg: readSettings(['EPISODES_SIM_FFMPEG'], env).EPISODES_SIM_FFMPEG };
}
