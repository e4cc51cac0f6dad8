/** Where the vendor lives, from the environment, parsed once at the edge. */
import { PipelineError, ErrorType } from '../domain/errors';
import { readSettings } from '../settings/read';
import { settingDefault } from '../settings/table';

export const DEFAULT_VENDOR_TIMEOUT_MS = settingDefault('EPISODES_VENDOR_TIMEOUT_MS');

export interface VendorEndpoint {
  baseUrl: URL;
  timeoutMs: number;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * A base URL we are willing to send the API key to: https anywhere, plain http only to this machine (the simulator).
 * No credentials, query or fragment in it, since those would end up in every request and in error messages.
 */
export function parseVendorBaseUrl(raw: string, setting = 'EPISODES_VENDOR_BASE_URL'): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new PipelineError(ErrorType.InvalidInput, `${setting} is not a URL`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new PipelineError(ErrorType.InvalidInput, `${setting} must not contain credentials`);
  }
  if (url.search !== '' || url.hash !== '') {
    throw new PipelineError(ErrorType.InvalidInput, `${setting} must not contain a query or fragment`);
  }
  if (!isSafeTransport(url)) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      `${setting} ${url.origin}: the API key travels only over https (plain http only to localhost)`,
    );
  }
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/** https anywhere, plain http only to this machine. */
export function isSafeTransport(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
}

/** `EPISODES_VENDOR_BASE_URL` (default the simulator's usual port) and `EPISODES_VENDOR_TIMEOUT_MS` (per request). */
export function vendorEndpointFromEnv(env: NodeJS.ProcessEnv = process.env): VendorEndpoint {
  const s = readSettings(['EPISODES_VENDOR_BASE_URL', 'EPISODES_VENDOR_TIMEOUT_MS'], env);
  return { baseUrl: parseVendorBaseUrl(s.EPISODES_VENDOR_BASE_URL), timeoutMs: s.EPISODES_VENDOR_TIMEOUT_MS };
}
