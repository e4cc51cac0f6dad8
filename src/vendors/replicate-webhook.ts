/**
 * Checking a Replicate webhook before reading a byte of it (https://replicate.com/docs/topics/webhooks/verify-webhook):
 * `webhook-id`, `webhook-timestamp` and `webhook-signature` (space-separated `v1,<base64>` entries) must be present,
 * the timestamp recent, and one entry equal (constant time) to HMAC-SHA256 over `<id>.<timestamp>.<raw body>` keyed
 * with the account's secret. Anything else is refused with a `VendorError` (operation `readCallback`).
 */
import { timingSafeEqual } from 'node:crypto';
import { ErrorType } from '../domain/errors';
import {
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  webhookSignature,
} from '../vendor-api/replicate-api';
import { VendorError } from '../vendor-api/vendor-error';
import type { CallbackRequest } from './port';

/** The receiver's choice; the docs' examples and Standard Webhooks use five minutes. */
export const WEBHOOK_TOLERANCE_MS = 5 * 60_000;
export const MAX_WEBHOOK_BYTES = 1024 * 1024;

/** Throws unless the request carries a valid, recent signature by `secret` (`whsec_…`). */
export function verifyWebhook(request: CallbackRequest, secret: string, now = Date.now()): void {
  if (request.body.length > MAX_WEBHOOK_BYTES) throw refused(`body over ${MAX_WEBHOOK_BYTES} bytes`);
  const id = request.headers[WEBHOOK_ID_HEADER];
  const timestamp = request.headers[WEBHOOK_TIMESTAMP_HEADER];
  const signatures = request.headers[WEBHOOK_SIGNATURE_HEADER];
  if (!id || !timestamp || !signatures) throw refused('a webhook-id, -timestamp or -signature header is missing');
  if (!/^\d{1,12}$/.test(timestamp)) throw refused('webhook-timestamp is not Unix seconds');
  if (Math.abs(now - Number(timestamp) * 1000) > WEBHOOK_TOLERANCE_MS) {
    throw refused('webhook-timestamp is outside the tolerance window (a replay, or a clock far off)');
  }
  const expected = Buffer.from(webhookSignature(secret, id, timestamp, request.body), 'base64');
  const matches = signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw refused('no webhook-signature entry matches');
}

export function refused(why: string): VendorError {
  return new VendorError({
    type: ErrorType.VendorRejected,
    message: `replicate webhook refused: ${why}`,
    operation: 'readCallback',
    reason: 'integrity-mismatch',
    outcome: null,
  });
}
