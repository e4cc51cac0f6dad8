/**
 * The demo's vendor (`npm run demo -- --vendor native|fal|replicate`): that flavor's simulator, started in process, and
 * the vendors the worker and the price publisher use. fal and Replicate are set up as an operator would, through the
 * settings (each kind `adapter:model`, the adapter's URLs and key), so the demo runs the same path as `npm start`.
 */
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { ErrorType, PipelineError } from './domain/errors';
import type { PaidStep } from './domain/paid-step';
import { loadSimulatorSettings, type DemoSettings } from './process/config';
import { staticCredentialsLoader } from './vendor-api/credentials';
import { startFalSimulator } from './vendor-sim/fal';
import { startReplicateSimulator } from './vendor-sim/replicate';
import { startVendorSimulator } from './vendor-sim/simulator';
import { nativeVendors, vendorsFromEnv } from './vendors/directory';
import type { Vendors } from './vendors/port';

export const DEMO_VENDORS = ['native', 'fal', 'replicate'] as const;
export type DemoVendorName = (typeof DEMO_VENDORS)[number];

/** Each kind's model at fal and Replicate: example names (a simulator runs any model; a real vendor bills per model). */
const DEMO_MODELS: Record<Exclude<DemoVendorName, 'native'>, Record<PaidStep, string>> = {
  fal: {
    video: 'fal-ai/kling-video/v2.1/standard/text-to-video',
    cover: 'fal-ai/flux/dev',
    rework: 'fal-ai/kling-video/v2.1/standard/text-to-video',
    assembly: 'fal-ai/ffmpeg-api/compose',
  },
  replicate: {
    video: 'kwaivgi/kling-v2.1',
    cover: 'black-forest-labs/flux-dev',
    rework: 'kwaivgi/kling-v2.1',
    assembly: 'acme/video-compose',
  },
};

export interface DemoVendor {
  url: string;
  vendors: Vendors;
  /** What the simulator billed, one line per charge (`<the vendor's job id> <amount>`): the ledger must equal it. */
  journal(): { job: string; amount_cents: number; currency: string }[];
  close(): Promise<void>;
}

/** `--vendor NAME` from the command line; native when absent. */
export function demoVendorOf(argv: readonly string[]): DemoVendorName {
  const at = argv.indexOf('--vendor');
  if (at === -1) return 'native';
  const name = argv[at + 1];
  const known = DEMO_VENDORS.find((v) => v === name);
  if (!known) throw new PipelineError(ErrorType.InvalidInput, `--vendor must be one of ${DEMO_VENDORS.join(', ')}`);
  return known;
}

/** Starts `name`'s simulator on the demo's vendor port. The native one keeps its jobs in the data dir. */
export async function startDemoVendor(name: DemoVendorName, demo: DemoSettings, dataDir: string): Promise<DemoVendor> {
  const key = demo.vendorApiKey ?? `demo-${randomBytes(12).toString('hex')}`;
  const common = { port: demo.vendorPort, ...loadSimulatorSettings() };
  if (name === 'native') {
    const sim = await startVendorSimulator({
      apiKey: key,
      stateFile: path.join(dataDir, 'vendor-simulator.json'),
      jobDurationMs: 500,
      ...common,
    });
    const vendors = nativeVendors(staticCredentialsLoader(key), { baseUrl: new URL(sim.url), timeoutMs: 5_000 });
    const journal = () =>
      sim.billing().map((c) => ({ job: c.job_id, amount_cents: c.amount_cents, currency: c.currency }));
    return { url: sim.url, vendors, journal, close: () => sim.close() };
  }
  if (name === 'fal') {
    const sim = await startFalSimulator({ apiKey: key, jobDurationMs: 500, ...common });
    const env = {
      ...assigned('fal'),
      EPISODES_FAL_QUEUE_URL: sim.queueUrl,
      EPISODES_FAL_API_URL: sim.apiUrl,
      EPISODES_FAL_JWKS_URL: sim.jwksUrl,
      EPISODES_FAL_KEY: key,
      EPISODES_FAL_KEY_FILE: '',
    };
    const journal = () =>
      sim.billing().map((c) => ({ job: c.request_id, amount_cents: c.amount_cents, currency: c.currency }));
    return { url: sim.url, vendors: vendorsFromEnv(env), journal, close: () => sim.close() };
  }
  const sim = await startReplicateSimulator({ token: key, predictionMs: 500, ...common });
  const env = {
    ...assigned('replicate'),
    EPISODES_REPLICATE_URL: sim.url,
    EPISODES_REPLICATE_TOKEN: key,
    EPISODES_REPLICATE_TOKEN_FILE: '',
  };
  const journal = () => sim.journal().map((c) => ({ job: c.id, amount_cents: c.amount_cents, currency: c.currency }));
  return { url: sim.url, vendors: vendorsFromEnv(env), journal, close: () => sim.close() };
}

/** The environment with every kind assigned to `adapter:<its demo model>`, as an operator would set it. */
function assigned(adapter: Exclude<DemoVendorName, 'native'>): NodeJS.ProcessEnv {
  const m = DEMO_MODELS[adapter];
  return {
    ...process.env,
    EPISODES_VENDOR_VIDEO: `${adapter}:${m.video}`,
    EPISODES_VENDOR_COVER: `${adapter}:${m.cover}`,
    EPISODES_VENDOR_REWORK: `${adapter}:${m.rework}`,
    EPISODES_VENDOR_ASSEMBLY: `${adapter}:${m.assembly}`,
  };
}
