/**
 * fal's webhook signature (docs/vendors.md, "Webhook signing"): ED25519 over
 * `request_id \n user_id \n timestamp \n hex(sha256(raw body))`, checked against any key of fal's JWKS, the timestamp
 * within 300 s of now. Anything else is refused with a `VendorError` before a byte of the body is believed.
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { ErrorType } from '../domain/errors';
import { VendorError } from '../vendor-api/vendor-error';
import { webhookSchema } from './fal-api';
import type { FalJwks, Jwk } from './fal-jwks';
import type { CallbackRequest } from './port';
import type { z } from 'zod';

export const FAL_WEBHOOK_TOLERANCE_S = 300;

export interface FalWebhookCheck {
  /** fal's JWKS keys, kept by the adapter (fal-jwks.ts): fetched again only when a signature matches none. */
  keys: Pick<FalJwks, 'current' | 'refetched'>;
  nowMs: number;
  maxBodyBytes: number;
}

export type FalWebhook = z.infer<typeof webhookSchema>;

export async function verifyFalWebhook(request: CallbackRequest, check: FalWebhookCheck): Promise<FalWebhook> {
  const h = (name: string) => request.headers[name] ?? request.headers[name.toLowerCase()];
  const requestId = h('x-fal-webhook-request-id');
  const userId = h('x-fal-webhook-user-id');
  const timestamp = h('x-fal-webhook-timestamp');
  const signature = h('x-fal-webhook-signature');
  if (request.body.length > check.maxBodyBytes) throw refused(`body over ${check.maxBodyBytes} bytes`);
  if (!requestId || !userId || !timestamp || !signature) throw refused('a signature header is missing');
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(check.nowMs / 1000 - Number(timestamp)) > FAL_WEBHOOK_TOLERANCE_S) {
    throw refused(`timestamp outside ${FAL_WEBHOOK_TOLERANCE_S} s of now`);
  }
  if (!/^([0-9a-f]{2}){64}$/i.test(signature)) throw refused('the signature is not 64 bytes of hex');
  const bodyHash = createHash('sha256').update(request.body).digest('hex');
  const message = Buffer.from(`${requestId}\n${userId}\n${timestamp}\n${bodyHash}`, 'utf8');
  const sig = Buffer.from(signature, 'hex');
  const signedBy = (jwks: readonly Jwk[]) =>
    jwks.map(publicKey).some((key) => key !== null && verify(null, message, key, sig));
  const kept = await check.keys.current();
  if (!signedBy(kept)) {
    // fal may have rotated its key: the JWKS is fetched again, at most once a minute whatever the callers send.
    const rotated = await check.keys.refetched(kept);
    if (!rotated || !signedBy(rotated)) throw refused('the signature matches no key of the JWKS');
  }
  let json: unknown;
  try {
    json = JSON.parse(request.body.toString('utf8'));
  } catch {
    throw refused('the signed body is not JSON');
  }
  const parsed = webhookSchema.safeParse(json);
  if (!parsed.success || parsed.data.request_id !== requestId) throw refused('the signed body is not a fal webhook');
  return parsed.data;
}

function publicKey(jwk: Jwk): KeyObject | null {
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') return null;
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
  } catch {
    return null;
  }
}

export function refused(why: string): VendorError {
  return new VendorError({
    type: ErrorType.VendorRejected,
    message: `fal webhook refused: ${why}`,
    operation: 'readCallback',
    reason: 'integrity-mismatch',
    outcome: null,
  });
}
