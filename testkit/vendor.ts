/** Test helpers for the vendor boundary: simulators and hostile servers that are always closed, secret checks. */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import type { CallbackRequest } from '../src/vendors/port';
import { VendorClient, type VendorClientOptions } from '../src/vendor-api/client';
import { startVendorSimulator, type VendorSimulator, type VendorSimulatorOptions } from '../src/vendor-sim/simulator';
import { isVendorError, type VendorError } from '../src/vendor-api/vendor-error';

/** Distinctive, so a leak anywhere is unmistakable. */
export const TEST_API_KEY = 'sk-test-7f3a9c21-SECRET-d4e8b6';

export const videoRequest = {
  kind: 'video',
  episode_id: '2026-W32-1',
  spec: { duration_s: 60, style: 'calm' },
} as const;

/** Registers an afterEach that closes every simulator the test started, pass or fail. */
export function useSimulators(): (options?: Partial<VendorSimulatorOptions>) => Promise<VendorSimulator> {
  const started: VendorSimulator[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((s) => s.close()));
  });
  return async (options = {}) => {
    const sim = await startVendorSimulator({ apiKey: TEST_API_KEY, ...options });
    started.push(sim);
    return sim;
  };
}

export interface TestServer {
  url: string;
  close(): Promise<void>;
}

/** A bare HTTP server on 127.0.0.1 for responses no honest vendor sends; closed after each test. */
export function useHostileServers(): (handler: http.RequestListener) => Promise<TestServer> {
  const started: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((s) => s.close()));
  });
  return async (handler) => {
    const server = http.createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const handle: TestServer = {
      url: `http://127.0.0.1:${port}`,
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    };
    started.push(handle);
    return handle;
  };
}

export function clientFor(
  target: { url: string },
  options: Partial<Omit<VendorClientOptions, 'baseUrl'>> = {},
): VendorClient {
  return new VendorClient({ baseUrl: target.url, apiKey: TEST_API_KEY, timeoutMs: 2000, ...options });
}

/** A port nothing listens on: bind, note, release. */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export { sleep, waitFor } from './wait';

/** Everything a caller could print about a value: its message, stack, inspection (causes included) and JSON. */
export function everyRendering(value: unknown): string {
  const parts = [inspect(value, { depth: null, showHidden: true }), safeJson(value)];
  if (value instanceof Error) parts.push(value.message, value.stack ?? '', String(value));
  return parts.join('\n');
}

export function assertNoSecret(value: unknown, secret = TEST_API_KEY): void {
  assert.ok(!everyRendering(value).includes(secret), 'the API key leaked');
}

export function asVendorError(e: unknown): VendorError {
  assert.ok(isVendorError(e), `expected a VendorError, got ${String(e)}`);
  return e;
}

/** Captures the promise's rejection (failing the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  assert.fail('expected a rejection, got success');
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

/** Raw request to the simulator, for the status codes and headers the client deliberately hides. */
export async function raw(
  sim: { url: string },
  method: string,
  path: string,
  options: { key?: string | null; idempotencyKey?: string; body?: unknown; rawBody?: string } = {},
): Promise<{ status: number; headers: Headers; json: unknown; text: string }> {
  const headers: Record<string, string> = {};
  const key = options.key === undefined ? TEST_API_KEY : options.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${sim.url}${path}`, { method, headers, body });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** A webhook receiver on 127.0.0.1 keeping each delivery as it arrived: URL, headers, raw bytes (readCallback's input). */
export async function webhookCapture(): Promise<{ url: string; got: CallbackRequest[]; close(): Promise<void> }> {
  const got: CallbackRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      got.push({ url: new URL(req.url ?? '/', 'http://127.0.0.1'), headers, body: Buffer.concat(chunks) });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    got,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
