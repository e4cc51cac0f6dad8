/** Which adapter a step's jobs go to, and how each is opened (its endpoint and key, read only when opened). */
import type { PaidStep } from '../domain/paid-step';
import { PipelineError, ErrorType } from '../domain/errors';
import { createVendorClient } from '../vendor-api/client';
import type { CredentialsLoader } from '../vendor-api/credentials';
import type { VendorEndpoint } from '../vendor-api/endpoint';
import { nativeAdapter } from './native';
import type { VendorAdapter, VendorLogger, Vendors } from './port';

export interface AdapterSettings {
  endpoint: VendorEndpoint;
  credentials: CredentialsLoader;
}

/** Every step on the project's own vendor API: the embedded default. */
export function nativeVendors(credentials: CredentialsLoader, endpoint: VendorEndpoint): Vendors {
  return vendorDirectory({ native: { endpoint, credentials } }, () => 'native');
}

export function vendorDirectory(
  adapters: Readonly<Record<string, AdapterSettings>>,
  assigned: (step: PaidStep) => string,
): Vendors {
  return {
    assigned,
    async open(name: string, logger?: VendorLogger): Promise<VendorAdapter> {
      const settings = adapters[name];
      if (name !== 'native' || !settings) {
        throw new PipelineError(ErrorType.InvalidInput, `no vendor adapter named ${JSON.stringify(name)} is set up`);
      }
      const { endpoint, credentials } = settings;
      return nativeAdapter(
        await createVendorClient(credentials, { baseUrl: endpoint.baseUrl, timeoutMs: endpoint.timeoutMs, logger }),
      );
    },
  };
}
