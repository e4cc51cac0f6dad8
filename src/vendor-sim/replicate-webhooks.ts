/**
 * Webhook delivery as Replicate documents it (https://replicate.com/docs/topics/webhooks): a POST of the prediction
 * to the URL given at creation, signed (Standard-Webhooks headers, HMAC-SHA256 with the account's `whsec_` secret).
 * Only the `completed` event is retried, on no connection or a 4xx/5xx, with growing delays (about a minute in all;
 * shorter in tests); `webhook-id` stays the same across retries, so identical webhooks can arrive more than once.
 */
import { randomBytes } from 'node:crypto';
import { exchange } from '../vendor-api/http-exchange';
import {
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  webhookSignature,
} from '../vendor-api/replicate-api';

/** About one minute from the first failure to the last try (docs: "the last about one minute after completion"). */
export const DEFAULT_WEBHOOK_RETRY_DELAYS_MS = [1_000, 2_000, 4_000, 8_000, 16_000, 30_000];

export interface Delivery {
  webhookId: string;
  event: 'start' | 'completed';
  predictionId: string;
  attempt: number;
  /** The status answered, or null when the receiver could not be reached. */
  status: number | null;
}

export interface WebhookSenderOptions {
  secret: string;
  retryDelaysMs: readonly number[];
  /** Cancels pending retries when the simulator closes. */
  signal: AbortSignal;
  log?: (line: string) => void;
}

export class WebhookSender {
  readonly deliveries: Delivery[] = [];

  constructor(private readonly options: WebhookSenderOptions) {}

  /** Sends one event; `completed` is retried on failure, `copies` > 1 delivers it again after it got through. */
  async send(url: string, event: Delivery['event'], body: unknown, copies = 1): Promise<void> {
    const webhookId = `msg_${randomBytes(12).toString('hex')}`;
    const bytes = Buffer.from(JSON.stringify(body));
    const predictionId = String((body as { id?: unknown }).id);
    const delays = event === 'completed' ? this.options.retryDelaysMs : [];
    for (let copy = 0; copy < copies; copy++) {
      for (let attempt = 0; attempt <= delays.length; attempt++) {
        if (attempt > 0 && !(await this.pause(delays[attempt - 1]!))) return;
        if (this.options.signal.aborted) return;
        const status = await this.post(url, webhookId, bytes);
        this.deliveries.push({ webhookId, event, predictionId, attempt: attempt + 1, status });
        this.options.log?.(`webhook ${event} ${predictionId} attempt ${attempt + 1} → ${status ?? 'no connection'}`);
        if (status !== null && status >= 200 && status < 300) break;
      }
    }
  }

  /** The signed POST; null when no answer came. Redirects are not followed (docs). */
  private async post(url: string, webhookId: string, body: Buffer): Promise<number | null> {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = webhookSignature(this.options.secret, webhookId, timestamp, body);
    try {
      const res = await exchange({
        url: new URL(url),
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [WEBHOOK_ID_HEADER]: webhookId,
          [WEBHOOK_TIMESTAMP_HEADER]: timestamp,
          [WEBHOOK_SIGNATURE_HEADER]: `v1,${signature}`,
        },
        body,
        timeoutMs: 10_000,
        signal: this.options.signal,
        maxResponseBytes: 64 * 1024,
      });
      return res.status;
    } catch {
      return null;
    }
  }

  /** Waits `ms`; false when the simulator closed meanwhile. */
  pause(ms: number): Promise<boolean> {
    const { signal } = this.options;
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      }, ms);
      const onAbort = (): void => {
        clearTimeout(timer);
        resolve(false);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** A new account secret: `whsec_` and 24 random bytes in base64, as `GET /v1/webhooks/default/secret` answers. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}
