/** fal from the settings: its hosts, its key (read only when a paid step opens it), each kind's metered maximum. */
import { ErrorType, PipelineError } from '../domain/errors';
import type { PaidStep } from '../domain/paid-step';
import { readSettings } from '../settings/read';
import { meteredMaxCentsFromEnv } from './metered-max';
import { envCredentialsLoader, type CredentialsLoader } from '../vendor-api/credentials';
import { falAdapter, falCallbackReader, falJwks } from './fal';
import type { CallbackReader, VendorAdapter, VendorLogger } from './port';

/** directory.ts's `AdapterOpener` (not imported: the directory imports this file). */
type AdapterOpener = (model: string | null, logger?: VendorLogger) => Promise<VendorAdapter>;

export interface FalEndpoint {
  queueUrl: string;
  apiUrl: string;
  jwksUrl: string;
  timeoutMs: number;
  maxCents: Record<PaidStep, number>;
}

export function falEndpointFromEnv(env: NodeJS.ProcessEnv = process.env): FalEndpoint {
  const s = readSettings(
    ['EPISODES_FAL_QUEUE_URL', 'EPISODES_FAL_API_URL', 'EPISODES_FAL_JWKS_URL', 'EPISODES_VENDOR_TIMEOUT_MS'],
    env,
  );
  return {
    queueUrl: s.EPISODES_FAL_QUEUE_URL,
    apiUrl: s.EPISODES_FAL_API_URL,
    jwksUrl: s.EPISODES_FAL_JWKS_URL,
    timeoutMs: s.EPISODES_VENDOR_TIMEOUT_MS,
    maxCents: meteredMaxCentsFromEnv(env),
  };
}

/** Opens `fal:<model>`; the key is loaded only now, after the episode guard. Its adapters share one JWKS. */
export function falAdapterOpener(credentials: CredentialsLoader, endpoint: FalEndpoint): AdapterOpener {
  const jwks = falJwks(endpoint);
  return async (model, logger) => {
    if (model === null) {
      throw new PipelineError(ErrorType.InvalidInput, 'fal needs a model: `fal:<owner/name[/subpath]>`');
    }
    return falAdapter({ ...endpoint, model, apiKey: await credentials.load(), logger, jwks });
  };
}

/** What checks fal's webhooks for the callback receiver: no key, no model, one JWKS kept for every callback. */
export function falCallbackOpener(env: NodeJS.ProcessEnv): () => Promise<CallbackReader> {
  const reader = falCallbackReader(falEndpointFromEnv(env));
  return () => Promise.resolve(reader);
}

export function falOpener(env: NodeJS.ProcessEnv, warn?: (message: string) => void): AdapterOpener {
  const settings = { key: 'EPISODES_FAL_KEY', file: 'EPISODES_FAL_KEY_FILE', what: 'fal key' } as const;
  return falAdapterOpener(envCredentialsLoader(env, { settings, ...(warn ? { warn } : {}) }), falEndpointFromEnv(env));
}
