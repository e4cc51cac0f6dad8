/**
 * A review webhook for tests: a real HTTP server on 127.0.0.1 that records every POST (its Idempotency-Key header and
 * JSON body) and answers as the test says: 200, a status, or never (the request is held open until close).
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/** The token part of the URL, as a Slack webhook carries its secret: it must never reach a log or a history. */
export const WEBHOOK_SECRET = 'SECRET-hook-3f9a1c';

export interface ReceivedNotice {
  key: string | undefined;
  contentType: string | undefined;
  body: Record<string, unknown>;
  /** The status answered, or undefined while the request is held open (or was never answered). */
  answered: number | undefined;
}

/** How to answer one notice: a status, or `hang` (no answer at all). */
export type Answer = number | 'hang';

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedNotice[];
  /** Every notice received for this episode, in order. */
  of(episodeId: string): ReceivedNotice[];
  close(): Promise<void>;
}

const MAX_BODY = 64 * 1024;

/** `port` 0 (default) picks a free one; a receiver restarted after an outage passes its old port. */
export async function startWebhookReceiver(
  answer: (body: Record<string, unknown>) => Answer = () => 200,
  { port: wanted = 0, onReceive }: { port?: number; onReceive?: (notice: ReceivedNotice) => void } = {},
) {
  const received: ReceivedNotice[] = [];
  const held = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== `/hooks/${WEBHOOK_SECRET}`) {
      res.writeHead(404).end();
      return;
    }
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > MAX_BODY) req.destroy();
    });
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      const header = req.headers['idempotency-key'];
      const notice: ReceivedNotice = {
        key: typeof header === 'string' ? header : undefined,
        contentType: req.headers['content-type'],
        body,
        answered: undefined,
      };
      received.push(notice);
      onReceive?.(notice);
      const a = answer(body);
      if (a === 'hang') {
        held.add(res);
        return;
      }
      notice.answered = a;
      res.writeHead(a, { 'content-type': 'text/plain' }).end(a === 200 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(wanted, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/${WEBHOOK_SECRET}`,
    port,
    received,
    of: (episodeId: string) => received.filter((r) => r.body.episode_id === episodeId),
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  } satisfies WebhookReceiver;
}
