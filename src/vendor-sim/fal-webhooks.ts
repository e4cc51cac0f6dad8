/**
 * The fal simulator's webhooks: signed as fal signs them (ED25519 over request id, user id, timestamp and the body's
 * sha256; the public key served as a JWKS), delivered when a request ends and redelivered on failure up to `retries`
 * times spread over `windowMs` (fal: 10 times within 2 hours).
 */
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import * as http from 'node:http';

export const FAL_SIM_USER_ID = 'sim-user';

export interface WebhookDelivery {
  requestId: string;
  attempt: number;
  /** The receiver's status; null when it could not be reached. */
  status: number | null;
  duplicate: boolean;
  at: string;
}

export class FalWebhookSender {
  private privateKey: KeyObject;
  jwks: { keys: Record<string, unknown>[] } = { keys: [] };
  private generation = 0;
  readonly deliveries: WebhookDelivery[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly o: { retries: number; windowMs: number; log?: (line: string) => void }) {
    this.privateKey = this.rotateKey();
  }

  /** A new key signs from now on and the JWKS lists only it (fal's rotation policy: docs silent). */
  rotateKey(): KeyObject {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    this.generation += 1;
    const kid = `sim-${this.generation}`;
    this.jwks = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'EdDSA' }] };
    this.privateKey = privateKey;
    return privateKey;
  }

  /** Headers fal sends with `body` for `requestId`, signed now (or at `timestampS`, for tests). */
  signedHeaders(requestId: string, body: Buffer, timestampS = Math.floor(Date.now() / 1000)): Record<string, string> {
    const hash = createHash('sha256').update(body).digest('hex');
    const message = Buffer.from(`${requestId}\n${FAL_SIM_USER_ID}\n${timestampS}\n${hash}`, 'utf8');
    return {
      'content-type': 'application/json',
      'x-fal-webhook-request-id': requestId,
      'x-fal-webhook-user-id': FAL_SIM_USER_ID,
      'x-fal-webhook-timestamp': String(timestampS),
      'x-fal-webhook-signature': sign(null, message, this.privateKey).toString('hex'),
    };
  }

  /** Delivers after `delayMs`; a failed delivery is tried again; `duplicate`: once more after the first success. */
  deliver(url: string, requestId: string, body: unknown, options: { delayMs: number; duplicate: boolean }): void {
    const bytes = Buffer.from(JSON.stringify(body));
    const attempt = (n: number): void => {
      void this.post(url, requestId, bytes).then((status) => {
        const ok = status !== null && status >= 200 && status < 300;
        this.deliveries.push({ requestId, attempt: n, status, duplicate: false, at: new Date().toISOString() });
        if (ok && options.duplicate) {
          void this.post(url, requestId, bytes).then((again) => {
            this.deliveries.push({
              requestId,
              attempt: n,
              status: again,
              duplicate: true,
              at: new Date().toISOString(),
            });
          });
        }
        if (!ok && n <= this.o.retries) this.later(() => attempt(n + 1), this.o.windowMs / this.o.retries);
      });
    };
    this.later(() => attempt(1), options.delayMs);
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private later(fn: () => void, ms: number): void {
    if (this.closed) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.closed) fn();
    }, ms);
    this.timers.add(t);
  }

  private post(url: string, requestId: string, body: Buffer): Promise<number | null> {
    return new Promise((resolve) => {
      let req: http.ClientRequest;
      try {
        const headers = { ...this.signedHeaders(requestId, body), 'content-length': String(body.length) };
        req = http.request(url, { method: 'POST', headers, agent: false, timeout: 5_000 });
      } catch {
        return resolve(null);
      }
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? null));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(null));
      req.end(body);
      this.o.log?.(`webhook POST for ${requestId}`);
    });
  }
}
