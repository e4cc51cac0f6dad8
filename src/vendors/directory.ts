/**
 * Which adapter a step's jobs go to, and how each is opened. A step's vendor is written `adapter` or `adapter:model`
 * (`fal:fal-ai/flux/dev`): the settings assign one per kind, and each step record keeps the one its job went to, so
 * a settle goes back there whatever the settings say later. Keys are read only when an adapter is opened.
 */
import { PipelineError, ErrorType } from '../domain/errors';
import { PAID_STEPS, type PaidStep } from '../domain/paid-step';
import { readSettings } from '../settings/read';
import { createVendorClient } from '../vendor-api/client';
import { envCredentialsLoader, type CredentialsLoader } from '../vendor-api/credentials';
import { vendorEndpointFromEnv, type VendorEndpoint } from '../vendor-api/endpoint';
import { NATIVE_PROFILE, nativeAdapter } from './native';
import type { VendorProfile } from '../domain/vendor-profile';
import { falProfile } from './fal';
import { falCallbackOpener, falOpener } from './fal-opener';
import { meteredMaxCentsFromEnv } from './metered-max';
import type { CallbackReader, VendorAdapter, VendorLogger, Vendors } from './port';
import { replicateCallbackOpener, replicateOpener, replicateProfile } from './replicate';

/** Opens one adapter for a model (null: the adapter has one). */
export type AdapterOpener = (model: string | null, logger?: VendorLogger) => Promise<VendorAdapter>;

/** Opens what checks an adapter's callbacks: per account, so before anyone knows which step (or model) one is for. */
export type CallbackOpener = () => Promise<CallbackReader>;

/**
 * `adapter` or `adapter:model`, as settings and step records write a step's vendor. A model is up to five path
 * segments, each starting with a letter or digit: it lands in URL paths, so no `..` and no empty segment.
 */
export const VENDOR_PATTERN =
  /^([a-z][a-z0-9-]{0,31})(?::((?:[A-Za-z0-9][\w.-]{0,63})(?:\/[A-Za-z0-9][\w.-]{0,63}){0,4}))?$/;

export function vendorDirectory(
  openers: Readonly<Record<string, AdapterOpener>>,
  assigned: (step: PaidStep) => string,
  profiles: Readonly<Record<string, VendorProfile>> = { native: NATIVE_PROFILE },
  callbacks: Readonly<Record<string, CallbackOpener>> = {},
): Vendors {
  return {
    assigned,
    profiles: () => profiles,
    openCallbacks: (adapter) => (Object.hasOwn(callbacks, adapter) ? callbacks[adapter]!() : Promise.resolve(null)),
    open(vendor: string, logger?: VendorLogger): Promise<VendorAdapter> {
      const [, name = '', model] = VENDOR_PATTERN.exec(vendor) ?? [];
      const opener = Object.hasOwn(openers, name) ? openers[name] : undefined;
      if (!opener) {
        const known = Object.keys(openers).join(', ');
        return Promise.reject(
          new PipelineError(
            ErrorType.InvalidInput,
            `vendor ${JSON.stringify(vendor)} is not set up (set up: ${known})`,
          ),
        );
      }
      return opener(model ?? null, logger);
    },
  };
}

export function nativeOpener(credentials: CredentialsLoader, endpoint: VendorEndpoint): AdapterOpener {
  return async (_model, logger) =>
    nativeAdapter(
      await createVendorClient(credentials, { baseUrl: endpoint.baseUrl, timeoutMs: endpoint.timeoutMs, logger }),
    );
}

/** Every step on the project's own vendor API: the embedded default. */
export function nativeVendors(credentials: CredentialsLoader, endpoint: VendorEndpoint): Vendors {
  return vendorDirectory({ native: nativeOpener(credentials, endpoint) }, () => 'native');
}

/** The vendors of the settings: each kind's assignment (`EPISODES_VENDOR_VIDEO` …) and every adapter's endpoint. */
export function vendorsFromEnv(env: NodeJS.ProcessEnv = process.env, warn?: (message: string) => void): Vendors {
  const s = readSettings(
    ['EPISODES_VENDOR_VIDEO', 'EPISODES_VENDOR_COVER', 'EPISODES_VENDOR_REWORK', 'EPISODES_VENDOR_ASSEMBLY'],
    env,
  );
  const byStep: Record<PaidStep, string> = {
    video: s.EPISODES_VENDOR_VIDEO,
    cover: s.EPISODES_VENDOR_COVER,
    rework: s.EPISODES_VENDOR_REWORK,
    assembly: s.EPISODES_VENDOR_ASSEMBLY,
  };
  const openers: Record<string, AdapterOpener> = {
    native: nativeOpener(envCredentialsLoader(env, warn ? { warn } : {}), vendorEndpointFromEnv(env)),
    fal: falOpener(env, warn),
    replicate: replicateOpener(env, warn),
  };
  for (const step of PAID_STEPS) {
    const name = VENDOR_PATTERN.exec(byStep[step])?.[1] ?? '';
    if (!Object.hasOwn(openers, name)) {
      throw new PipelineError(
        ErrorType.InvalidInput,
        `EPISODES_VENDOR_${step.toUpperCase()}: no adapter ${JSON.stringify(name)} (adapters: ${Object.keys(openers).join(', ')})`,
      );
    }
  }
  const profiles: Record<string, VendorProfile> = {
    native: NATIVE_PROFILE,
    fal: falProfile(meteredMaxCentsFromEnv(env)),
    replicate: replicateProfile(meteredMaxCentsFromEnv(env)),
  };
  const callbacks = { fal: falCallbackOpener(env), replicate: replicateCallbackOpener(env, warn) };
  return vendorDirectory(openers, (step) => byStep[step], profiles, callbacks);
}
