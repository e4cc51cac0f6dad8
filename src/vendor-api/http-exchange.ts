/**
 * One HTTP request/response over a fresh connection, with an overall deadline and a response size cap.
 *
 * node:http rather than fetch because the paid boundary needs to know WHEN a failure happened: before the TCP (or
 * TLS) connection was up nothing can have reached the vendor; after it, the request may have been processed. A fresh
 * connection per request (no keep-alive pool) keeps that line exact: a reused idle socket that the server already
 * closed would fail "after connect" without the request ever having been read.
 */
import * as http from 'node:http';
import * as https from 'node:https';

export interface ExchangeRequest {
  url: URL;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: Buffer;
  /** Deadline for the whole exchange: connect, send, headers and the complete body. */
  timeoutMs: number;
  signal?: AbortSignal;
  maxResponseBytes: number;
}

export interface ExchangeResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export type ExchangeFailureReason = 'connect-failed' | 'timeout' | 'aborted' | 'connection-lost' | 'response-too-large';

export interface ExchangeFailureFacts {
  reason: ExchangeFailureReason;
  /** False only when the connection never came up: then the vendor cannot have seen the request. */
  mayHaveReachedVendor: boolean;
  /** The response status, when the headers arrived before the failure. */
  status: number | null;
}

export class ExchangeFailure extends Error implements ExchangeFailureFacts {
  readonly reason: ExchangeFailureReason;
  readonly mayHaveReachedVendor: boolean;
  readonly status: number | null;

  constructor(facts: ExchangeFailureFacts, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = facts.reason;
    this.mayHaveReachedVendor = facts.mayHaveReachedVendor;
    this.status = facts.status;
  }
}

export function exchange(r: ExchangeRequest): Promise<ExchangeResponse> {
  return new Promise<ExchangeResponse>((resolve, reject) => {
    const deadline = AbortSignal.timeout(r.timeoutMs);
    const signal = r.signal ? AbortSignal.any([deadline, r.signal]) : deadline;
    let connected = false;
    let status: number | null = null;
    let settled = false;

    const transport = r.url.protocol === 'https:' ? https : http;
    const req = transport.request(r.url, {
      method: r.method,
      headers: { ...r.headers, connection: 'close', 'content-length': String(r.body?.length ?? 0) },
      agent: false,
    });

    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      return true;
    };
    const fail = (reason: ExchangeFailureReason, message: string, cause?: unknown): void => {
      if (!settle()) return;
      req.destroy();
      const facts = { reason, mayHaveReachedVendor: connected, status };
      reject(new ExchangeFailure(facts, message, cause === undefined ? undefined : { cause }));
    };
    const onAbort = (): void =>
      deadline.aborted
        ? fail('timeout', `no complete response within ${r.timeoutMs} ms`)
        : fail('aborted', 'request cancelled by the caller');

    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort);

    req.on('socket', (socket) => {
      const ready = r.url.protocol === 'https:' ? 'secureConnect' : 'connect';
      socket.once(ready, () => {
        connected = true;
      });
    });
    req.on('error', (e: NodeJS.ErrnoException) =>
      connected
        ? fail('connection-lost', `connection lost (${e.code ?? 'error'})`, e)
        : fail('connect-failed', `cannot connect (${e.code ?? 'error'})`, e),
    );
    req.on('response', (res) => {
      status = res.statusCode ?? 0;
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > r.maxResponseBytes) {
        return fail('response-too-large', `response declares ${declared} bytes, limit ${r.maxResponseBytes}`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > r.maxResponseBytes) return fail('response-too-large', `response over ${r.maxResponseBytes} bytes`);
        chunks.push(chunk);
      });
      res.on('error', (e: NodeJS.ErrnoException) => fail('connection-lost', `response cut off (${e.code ?? 'error'})`));
      // A body cut short (fewer bytes than Content-Length, or a broken chunked stream) closes without `complete`.
      res.on('close', () => {
        if (!res.complete) fail('connection-lost', 'response cut off before its end');
      });
      res.on('end', () => {
        if (!res.complete || !settle()) return;
        resolve({ status: status ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
    });
    req.end(r.body);
  });
}
