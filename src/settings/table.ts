/**
 * Every setting of the pipeline, one row each: its variable, what it means, its default, whether it is a secret, and
 * the names it had before. The loaders (read.ts), `episodes config`, `--help` and docs/configuration.md all come from
 * this table. To add a setting, add a row here and read it with `readSettings` in the one loader of its feature
 * (CONTRIBUTING.md, "Settings").
 *
 * A row's `schema` parses the variable's text (undefined when unset or empty) into the value the loader gets, default
 * applied. Checks that need a feature's own rules (a URL's scheme, a timezone) stay in that feature's loader.
 */
import { z } from 'zod';
import { TASK_QUEUE } from '../domain/names';

export type SettingGroup = 'store' | 'temporal' | 'worker' | 'vendor' | 'review' | 'demo' | 'tests';

export interface SettingRow {
  group: SettingGroup;
  meaning: string;
  schema: z.ZodType;
  /**
   * `value`: never shown; `url`: shown with its credentials and query left out. Secrets never appear in an error, a
   * log line or `episodes config`.
   */
  secret?: 'value' | 'url';
  /** Older names, still read (each with one deprecation line per process); the row's name wins over them. */
  formerly?: readonly string[];
  /** The default as docs show it, when it is computed at run time (a path beside the build). */
  defaultText?: string;
}

/** The vendor simulator's usual port: the vendor's default base URL points at it. */
export const DEFAULT_VENDOR_PORT = 8790;

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const port = z.coerce.number().int().min(0).max(65_535);
const list = z.string().transform((text) =>
  text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== ''),
);

/** `adapter` or `adapter:model` (src/vendors/directory.ts checks the adapter exists). */
const vendorSchema = z
  .string()
  .regex(
    /^[a-z][a-z0-9-]{0,31}(:[A-Za-z0-9][\w.-]{0,63}(\/[A-Za-z0-9][\w.-]{0,63}){0,4})?$/,
    'is `adapter` or `adapter:model`',
  )
  .default('native');

export const SETTINGS = {
  // ---- the store ----
  EPISODES_STORE_URL: {
    group: 'store',
    meaning: 'postgres:// URL of the shared PostgreSQL store; unset: the file store',
    schema: z.string().optional(),
    secret: 'url',
  },
  EPISODES_DATA_DIR: {
    group: 'store',
    meaning: 'data directory of the file store',
    schema: z.string().default('./data'),
  },
  EPISODES_MEDIA_DIR: {
    group: 'store',
    meaning: "PostgreSQL store: root of the episodes' media directories (a shared mount on several hosts)",
    schema: z.string().default('./data/media'),
  },
  EPISODES_LOCK_TIMEOUT_MS: {
    group: 'store',
    meaning: 'give up waiting for the pipeline lock after this long (retryably)',
    schema: positiveInt(30_000),
  },
  EPISODES_LOCK_STALE_MS: {
    group: 'store',
    meaning: "a lock holder silent this long is taken over (file store); PostgreSQL's idle-in-transaction timeout",
    schema: positiveInt(10_000),
  },
  // ---- Temporal (the connection itself is the TEMPORAL_* profile of the temporal CLI) ----
  EPISODES_CONNECT_TIMEOUT_MS: {
    group: 'temporal',
    meaning: 'give up connecting to Temporal after this long',
    schema: positiveInt(5_000),
  },
  EPISODES_TASK_QUEUE: {
    group: 'temporal',
    meaning: 'task queue of the worker, the schedule and every command that starts a workflow',
    schema: z.string().min(1).default(TASK_QUEUE),
  },
  EPISODES_TIMEZONE: {
    group: 'temporal',
    meaning: "IANA timezone of the weekly schedule and of the ISO weeks (an episode's week)",
    schema: z.string().min(1).default('UTC'),
    formerly: ['PIPELINE_TIMEZONE'],
  },
  // ---- the worker ----
  EPISODES_BUDGET_CENTS: {
    group: 'worker',
    meaning: 'per-episode cost cap: a submission whose quote would exceed it is refused before it is sent',
    // 200 USD: a first cut (video 42 + cover 3 + assembly 8) plus several reworks at 15 each.
    schema: positiveInt(20_000),
    formerly: ['EPISODE_BUDGET_CENTS'],
  },
  EPISODES_MAX_CACHED_WORKFLOWS: {
    group: 'worker',
    meaning: "workflows kept in the worker's cache (0: none); an evicted one is replayed at its next task",
    schema: z.coerce
      .number()
      .int()
      .refine((n) => n === 0 || (n >= 2 && n <= 100_000), '0 (no cache) or 2..100000')
      .default(100),
  },
  EPISODES_WORKFLOW_BUNDLE: {
    group: 'worker',
    meaning: 'the pre-built workflow bundle, or `off` to bundle from sources at start',
    schema: z.string().optional(),
    defaultText: 'dist/workflow-bundle.js',
  },
  EPISODES_METRICS_ADDRESS: {
    group: 'worker',
    meaning: 'host:port of the Prometheus /metrics endpoint; unset: no metrics',
    schema: z
      .string()
      .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'expected host:port, e.g. 127.0.0.1:9464')
      .refine((a) => Number(a.slice(a.lastIndexOf(':') + 1)) <= 65_535, 'port out of range')
      .optional(),
  },
  EPISODES_STATE_METRICS_INTERVAL_MS: {
    group: 'worker',
    meaning: 'how often a worker that exports metrics reads the store and Temporal for the episodes_* gauges',
    schema: positiveInt(60_000),
  },
  EPISODES_DEPLOYMENT_NAME: {
    group: 'worker',
    meaning: "the worker's Worker Deployment (one per task queue)",
    // No '.' or ':': they join name and build id in the server's version strings.
    schema: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/, 'letters, digits, _ and -, at most 100')
      .default('weekly-media'),
  },
  EPISODES_BUILD_ID: {
    group: 'worker',
    meaning: "the worker's build id in its deployment",
    schema: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'letters, digits, ., _ and -, at most 100')
      .optional(),
    defaultText: "the first 12 hex digits of the workflow bundle's sha256",
  },
  EPISODES_LOG_FORMAT: {
    group: 'worker',
    meaning: 'worker logs: readable `text` or one `json` object per line',
    schema: z.enum(['text', 'json']).default('text'),
  },
  EPISODES_LOG_LEVEL: {
    group: 'worker',
    meaning: 'lowest level logged: TRACE, DEBUG, INFO, WARN or ERROR',
    schema: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']).default('INFO'),
  },
  // ---- the vendor ----
  EPISODES_VENDOR_BASE_URL: {
    group: 'vendor',
    meaning: 'base URL of the vendor API (https; plain http only to localhost)',
    schema: z.string().min(1).default(`http://127.0.0.1:${DEFAULT_VENDOR_PORT}`),
    formerly: ['VENDOR_BASE_URL'],
  },
  EPISODES_VENDOR_API_KEY: {
    group: 'vendor',
    meaning:
      'the vendor API key, read by paid steps and the price list workers publish; never by the review desk ' +
      '(or set EPISODES_VENDOR_API_KEY_FILE, not both)',
    schema: z.string().optional(),
    secret: 'value',
    formerly: ['VENDOR_API_KEY'],
  },
  EPISODES_VENDOR_API_KEY_FILE: {
    group: 'vendor',
    meaning: 'a file holding the vendor API key (surrounding whitespace trimmed)',
    schema: z.string().optional(),
    formerly: ['VENDOR_API_KEY_FILE'],
  },
  EPISODES_VENDOR_VIDEO: {
    group: 'vendor',
    meaning: 'the vendor of video steps: `native`, or `adapter:model` (docs/vendors.md); `episodes vendors` lists them',
    schema: vendorSchema,
  },
  EPISODES_VENDOR_COVER: {
    group: 'vendor',
    meaning: 'the vendor of cover steps: `native`, or `adapter:model` (docs/vendors.md); `episodes vendors` lists them',
    schema: vendorSchema,
  },
  EPISODES_VENDOR_REWORK: {
    group: 'vendor',
    meaning:
      'the vendor of rework steps: `native`, or `adapter:model` (docs/vendors.md); `episodes vendors` lists them',
    schema: vendorSchema,
  },
  EPISODES_VENDOR_ASSEMBLY: {
    group: 'vendor',
    meaning:
      'the vendor of assembly steps: `native`, or `adapter:model` (docs/vendors.md); `episodes vendors` lists them',
    schema: vendorSchema,
  },
  EPISODES_CALLBACK_LISTEN: {
    group: 'vendor',
    meaning: 'host:port where the worker takes vendor callbacks (webhooks); unset: none, every job is polled',
    schema: z
      .string()
      .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'expected host:port, e.g. 127.0.0.1:8791')
      .optional(),
  },
  EPISODES_CALLBACK_PUBLIC_URL: {
    group: 'vendor',
    meaning: 'the https URL at which vendors reach EPISODES_CALLBACK_LISTEN (set both or neither)',
    schema: z.string().optional(),
  },
  EPISODES_VENDOR_TIMEOUT_MS: {
    group: 'vendor',
    meaning: 'timeout of one vendor request',
    schema: z.coerce.number().int().min(1).max(600_000).default(10_000),
    formerly: ['VENDOR_TIMEOUT_MS'],
  },
  // ---- metered vendors' maximum per step, and fal (docs/vendors.md) ----
  EPISODES_VENDOR_VIDEO_MAX_CENTS: {
    group: 'vendor',
    meaning: 'the most a metered video step may cost: held against the budget until the vendor bills it',
    schema: positiveInt(6000),
  },
  EPISODES_VENDOR_COVER_MAX_CENTS: {
    group: 'vendor',
    meaning: 'the most a metered cover step may cost: held against the budget until the vendor bills it',
    schema: positiveInt(500),
  },
  EPISODES_VENDOR_REWORK_MAX_CENTS: {
    group: 'vendor',
    meaning: 'the most a metered rework step may cost: held against the budget until the vendor bills it',
    schema: positiveInt(3000),
  },
  EPISODES_VENDOR_ASSEMBLY_MAX_CENTS: {
    group: 'vendor',
    meaning: 'the most a metered assembly step may cost: held against the budget until the vendor bills it',
    schema: positiveInt(1500),
  },
  EPISODES_FAL_QUEUE_URL: {
    group: 'vendor',
    meaning: "fal's queue API (https; plain http only to localhost: `episodes vendor-sim --flavor fal`)",
    schema: z.string().min(1).default('https://queue.fal.run'),
  },
  EPISODES_FAL_API_URL: {
    group: 'vendor',
    meaning: "fal's Platform API: request listing and billing events (https; plain http only to localhost)",
    schema: z.string().min(1).default('https://api.fal.ai/v1'),
  },
  EPISODES_FAL_JWKS_URL: {
    group: 'vendor',
    meaning: "the JWKS fal's webhook signatures are checked against",
    schema: z.string().min(1).default('https://rest.alpha.fal.ai/.well-known/jwks.json'),
  },
  EPISODES_FAL_KEY: {
    group: 'vendor',
    meaning: 'the fal API key (admin scope: billing events), read only by paid steps (or EPISODES_FAL_KEY_FILE)',
    schema: z.string().optional(),
    secret: 'value',
  },
  EPISODES_FAL_KEY_FILE: {
    group: 'vendor',
    meaning: 'a file holding the fal API key (surrounding whitespace trimmed)',
    schema: z.string().optional(),
  },
  EPISODES_REPLICATE_URL: {
    group: 'vendor',
    meaning:
      'base URL of the Replicate API (https; plain http only to localhost: `episodes vendor-sim --flavor replicate`)',
    schema: z.string().min(1).default('https://api.replicate.com'),
  },
  EPISODES_REPLICATE_TOKEN: {
    group: 'vendor',
    meaning: 'the Replicate API token, read only by paid steps (or set EPISODES_REPLICATE_TOKEN_FILE, not both)',
    schema: z.string().optional(),
    secret: 'value',
  },
  EPISODES_REPLICATE_TOKEN_FILE: {
    group: 'vendor',
    meaning: 'a file holding the Replicate API token (surrounding whitespace trimmed)',
    schema: z.string().optional(),
  },
  EPISODES_REPLICATE_USD_PER_SECOND: {
    group: 'vendor',
    meaning:
      "price per second of the hardware the Replicate model runs on (replicate.com/pricing): a step's cost is " +
      'its `metrics.predict_time` × this',
    schema: z.coerce.number().positive().max(1).default(0.0014),
  },
  // ---- review notices and the review desk ----
  EPISODES_REVIEW_WEBHOOK_URL: {
    group: 'review',
    meaning: 'where the worker posts that a decision waits (https; a secret: tokens travel in the path); unset: off',
    schema: z.string().optional(),
    secret: 'value',
  },
  EPISODES_REVIEW_WEBHOOK_TIMEOUT_MS: {
    group: 'review',
    meaning: 'timeout of one webhook POST (100 to 30000)',
    // At most 30 s: below the notice activity's 1 min start-to-close timeout, so an attempt ends by its own first.
    schema: z.coerce.number().int().min(100).max(30_000).default(10_000),
  },
  EPISODES_REVIEW_PUBLIC_URL: {
    group: 'review',
    meaning: 'the review desk as people reach it: notices link to it; https makes its cookies Secure',
    schema: z.string().optional(),
  },
  EPISODES_REVIEW_LISTEN: {
    group: 'review',
    meaning: '`episodes review serve`: HOST:PORT the desk listens on',
    schema: z.string().default('127.0.0.1:8240'),
  },
  EPISODES_REVIEW_TRUST_PROXY: {
    group: 'review',
    meaning: "the desk's trusted proxies: a hop count or addresses/CIDRs (127.0.0.1,10.0.0.0/8); unset: none",
    schema: z.string().optional(),
  },
  EPISODES_REVIEW_SIGN_IN: {
    group: 'review',
    meaning: "the desk's sign-in methods: `token`, `oidc` or `token,oidc`",
    schema: list.pipe(z.array(z.enum(['token', 'oidc'])).min(1)).optional(),
    defaultText: 'oidc when an issuer is set, else token',
  },
  EPISODES_REVIEW_OIDC_ISSUER: {
    group: 'review',
    meaning: "the identity provider's issuer URL (https; plain http only on this machine)",
    schema: z.url().optional(),
  },
  EPISODES_REVIEW_OIDC_CLIENT_ID: {
    group: 'review',
    meaning: "the desk's client id at the identity provider",
    schema: z.string().optional(),
  },
  EPISODES_REVIEW_OIDC_CLIENT_SECRET: {
    group: 'review',
    meaning: "the desk's client secret (or set EPISODES_REVIEW_OIDC_CLIENT_SECRET_FILE, not both)",
    schema: z.string().optional(),
    secret: 'value',
  },
  EPISODES_REVIEW_OIDC_CLIENT_SECRET_FILE: {
    group: 'review',
    meaning: "a 0600 file, owned by the desk's user, holding the client secret",
    schema: z.string().optional(),
  },
  EPISODES_REVIEW_OIDC_SCOPES: {
    group: 'review',
    meaning: 'the scopes the desk asks the identity provider for',
    schema: z.string().default('openid email profile'),
  },
  EPISODES_REVIEW_OIDC_ALLOWED_EMAILS: {
    group: 'review',
    meaning: 'reviewers allowed by their verified email, comma-separated',
    schema: list.default([]),
  },
  EPISODES_REVIEW_OIDC_ALLOWED_GROUPS: {
    group: 'review',
    meaning: 'reviewers allowed by a group in their groups claim, comma-separated',
    schema: list.default([]),
  },
  EPISODES_REVIEW_OIDC_GROUPS_CLAIM: {
    group: 'review',
    meaning: 'the ID token claim that holds the groups',
    schema: z.string().default('groups'),
  },
  EPISODES_REVIEW_SESSION_IDLE_MS: {
    group: 'review',
    meaning: 'a desk session unused this long ends',
    schema: positiveInt(30 * 60_000),
  },
  EPISODES_REVIEW_SESSION_ABSOLUTE_MS: {
    group: 'review',
    meaning: 'a desk session ends this long after sign-in, used or not',
    schema: positiveInt(12 * 60 * 60_000),
  },
  EPISODES_REVIEW_OIDC_SESSION_MS: {
    group: 'review',
    meaning:
      'an OIDC session ends this long after sign-in (or at the absolute end, if sooner): how long a user removed at the provider keeps access',
    schema: positiveInt(15 * 60_000),
  },
  EPISODES_REVIEW_MAX_SESSIONS: {
    group: 'review',
    meaning: 'open desk sessions kept at most (the oldest go first)',
    schema: positiveInt(1_000),
  },
  EPISODES_REVIEW_AUDIT_LOG: {
    group: 'review',
    meaning: "the desk's audit log (sign-ins, failed ones too, and decisions): `stderr` or a file (created 0600)",
    schema: z.string().default('stderr'),
  },
  EPISODES_REVIEW_AUDIT_LOG_MAX_MB: {
    group: 'review',
    meaning: 'an audit log file past this size becomes `<file>.1` (the one before is dropped) and a new one is started',
    schema: positiveInt(100),
  },
  EPISODES_REVIEW_MAX_CONNECTIONS: {
    group: 'review',
    meaning: 'open connections to the desk at most',
    schema: positiveInt(256),
  },
  EPISODES_REVIEWERS_FILE: {
    group: 'review',
    meaning: "the desk's reviewers and their token hashes",
    schema: z.string().optional(),
    defaultText: '<data dir>/review/reviewers.json',
  },
  // ---- the demo and the vendor simulator ----
  EPISODES_DEMO_VENDOR_PORT: {
    group: 'demo',
    meaning: "`npm run demo`: the vendor simulator's port",
    schema: port.default(DEFAULT_VENDOR_PORT),
    formerly: ['DEMO_VENDOR_PORT'],
  },
  EPISODES_DEV_SERVER_IP: {
    group: 'demo',
    meaning: 'temporal-dev.sh and the demo: address of the local Temporal dev server',
    schema: z.string().min(1).default('127.0.0.1'),
    formerly: ['TEMPORAL_DEV_IP'],
  },
  EPISODES_DEV_SERVER_PORT: {
    group: 'demo',
    meaning: "temporal-dev.sh and the demo: the dev server's port",
    schema: port.default(7233),
    formerly: ['TEMPORAL_DEV_PORT'],
  },
  EPISODES_DEV_SERVER_UI_PORT: {
    group: 'demo',
    meaning: "temporal-dev.sh and the demo: the dev server's web UI port",
    schema: port.default(8233),
    formerly: ['TEMPORAL_DEV_UI_PORT'],
  },
  EPISODES_TEMPORAL_CLI: {
    group: 'demo',
    meaning: 'temporal-dev.sh: the temporal CLI to run (else on PATH, else installed into .tools/)',
    schema: z.string().optional(),
    formerly: ['TEMPORAL_CLI'],
  },
  EPISODES_SIM_FFMPEG: {
    group: 'demo',
    meaning: 'the ffmpeg the vendor simulator renders playable media with',
    schema: z.string().default('ffmpeg'),
  },
  // ---- tests ----
  EPISODES_FAILPOINTS: {
    group: 'tests',
    meaning:
      'fault tests only: where a process dies, throws or stalls (src/failpoints/); needs EPISODES_TEST_PROCESS; unset: none',
    schema: z.string().optional(),
  },
  EPISODES_TEST_PROCESS: {
    group: 'tests',
    meaning:
      'set to 1 by the test runner (testkit/setup.ts) alone: without it EPISODES_FAILPOINTS stops the worker and the desk at start, and no failpoint fires',
    schema: z.enum(['1']).optional(),
  },
} as const satisfies Record<`EPISODES_${string}`, SettingRow>;

export type SettingName = keyof typeof SETTINGS;
export type SettingValue<N extends SettingName> = z.output<(typeof SETTINGS)[N]['schema']>;

export const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[];

/** The row of a setting, through the common row type (the table's own type is the narrow one). */
export function settingRow(name: SettingName): SettingRow {
  return SETTINGS[name];
}

/** A setting's value when it is not set. */
export function settingDefault<N extends SettingName>(name: N): SettingValue<N> {
  return SETTINGS[name].schema.parse(undefined) as SettingValue<N>;
}

/**
 * The TEMPORAL_* variables whose values may be shown: where and as whom to connect, TLS files and switches, the codec
 * server's address, and former names of settings that are not secret. Every other one (API key, codec auth, key or
 * certificate data, gRPC metadata, any variable a later CLI adds) is a secret.
 */
const SHOWN_TEMPORAL_VARIABLES = new Set([
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_PROFILE',
  'TEMPORAL_CONFIG_FILE',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
  'TEMPORAL_CODEC_ENDPOINT',
  ...SETTING_NAMES.flatMap((n) => (settingRow(n).secret === undefined ? (settingRow(n).formerly ?? []) : [])),
]);

/** Whether a TEMPORAL_* variable's value is a secret: every one not known to be shown. */
export function isSecretTemporalVariable(name: string): boolean {
  return !SHOWN_TEMPORAL_VARIABLES.has(name);
}
