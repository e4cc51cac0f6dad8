/**
 * Fetching a prediction's output file: a public URL (replicate.delivery), so no token goes with it; https, or http to
 * this machine (the simulator); bounded in size. An output Replicate no longer serves (403, 404, 410: removed after
 * its hour) is a `downloadArtifact` error with that status, which parks the step: the job is done and paid.
 */
import { ErrorType } from '../domain/errors';
import { isSafeTransport } from '../vendor-api/endpoint';
import { exchange, ExchangeFailure } from '../vendor-api/http-exchange';
import { VendorError } from '../vendor-api/vendor-error';

export const MAX_OUTPUT_BYTES = 256 * 1024 * 1024;

export async function downloadOutput(raw: string, timeoutMs: number, maxBytes = MAX_OUTPUT_BYTES): Promise<Buffer> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw outputFailure('the output is not a URL', null);
  }
  if (!isSafeTransport(url) || url.username !== '' || url.password !== '') {
    throw outputFailure('the output URL is neither https nor on this machine', null);
  }
  let res;
  try {
    res = await exchange({ url, method: 'GET', headers: {}, timeoutMs, maxResponseBytes: maxBytes });
  } catch (e) {
    if (!(e instanceof ExchangeFailure)) throw e;
    throw outputFailure(e.message, e.status);
  }
  if (res.status === 200) return res.body;
  throw outputFailure(
    [403, 404, 410].includes(res.status) ? `HTTP ${res.status}: the output is gone (expired?)` : `HTTP ${res.status}`,
    res.status,
  );
}

export function outputFailure(what: string, status: number | null): VendorError {
  return new VendorError({
    type: ErrorType.VendorUnavailable,
    message: `replicate downloadArtifact: ${what}`,
    operation: 'downloadArtifact',
    reason: status === null ? 'malformed-response' : 'http-status',
    outcome: null,
    status,
  });
}
