/** Where the vendor lives, from the environment, parsed once at the edge. */
import { z } from 'zod';
import { PipelineError, ErrorType } from '../domain/errors';
import { firstIssue } from '../domain/zod-issue';
import { DEFAULT_VENDOR_BASE_URL } from './api';

export const DEFAULT_VENDOR_TIMEOUT_MS = 10_000;

export interface VendorEndpoint {
  baseUrl: URL;
  timeoutMs: number;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * A base URL we are willing to send the API key to: https anywhere, plain http only to this machine (the simulator).
 * No credentials, query or fragment in it, since those would end up in every request and in error messages.
 */
export function parseVendorBaseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new PipelineError(ErrorType.InvalidInput, 'VENDOR_BASE_URL is not a URL');
  }
  if (url.username !== '' || url.password !== '') {
    throw new PipelineError(ErrorType.InvalidInput, 'VENDOR_BASE_URL must not contain credentials');
  }
  if (url.search !== '' || url.hash !== '') {
    throw new PipelineError(ErrorType.InvalidInput, 'VENDOR_BASE_URL must not contain a query or fragment');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      `VENDOR_BASE_URL ${url.origin}: the API key travels only over https (plain http only to localhost)`,
    );
  }
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

const envSchema = z.object({
  VENDOR_BASE_URL: z.string().min(1).default(DEFAULT_VENDOR_BASE_URL),
  VENDOR_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(DEFAULT_VENDOR_TIMEOUT_MS),
});

/** `VENDOR_BASE_URL` (default the simulator's usual port) and `VENDOR_TIMEOUT_MS` (per request, default 10 s). */
export function vendorEndpointFromEnv(env: NodeJS.ProcessEnv = process.env): VendorEndpoint {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const { at, message } = firstIssue(parsed.error, 'environment');
    throw new PipelineError(ErrorType.InvalidInput, `invalid ${at}: ${message}`);
  }
  return { baseUrl: parseVendorBaseUrl(parsed.data.VENDOR_BASE_URL), timeoutMs: parsed.data.VENDOR_TIMEOUT_MS };
}
