/**
 * The one way every process reaches Temporal: the client `Connection` (CLI, demo, bench, tests) and the worker's
 * `NativeConnection` are built here from the same TemporalSettings (config.ts, the `temporal` CLI's profile
 * rules). A failure to connect is one PipelineError line that names the cause, within the connect timeout, and never
 * contains the API key or a private key.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { Connection, ConnectionOptions } from '@temporalio/client';
import { toClientOptions } from '@temporalio/envconfig';
import type { NativeConnection } from '@temporalio/worker';
import type { TemporalSettings } from './config';
import { PipelineError, ErrorType } from '../domain/errors';

type TlsOption = ConnectionOptions['tls'];

interface ResolvedOptions {
  address: string;
  apiKey?: string;
  tls: TlsOption;
  metadata?: Record<string, string>;
}

/** The grpc-js client connection (CLI, demo, tests). */
export async function connectClient(s: TemporalSettings): Promise<Connection> {
  const options = resolveOptions(s);
  // Loaded here, not at the top: the CLI commands that never reach Temporal start without it.
  const { Connection } = await import('@temporalio/client');
  const connecting = Connection.connect({ ...options, connectTimeout: s.connectTimeoutMs });
  // grpc-js retries a failing transport until the deadline and then says only "Failed to connect before the
  // deadline"; a plain TCP/TLS probe alongside it names the cause, and a definitive one ends the wait at once.
  const probe = probeTransport(s, options);
  try {
    return await Promise.race([
      connecting,
      probe.then((cause) => (cause === undefined ? connecting : Promise.reject(new ProbeFailure(cause)))),
    ]);
  } catch (e) {
    if (e instanceof ProbeFailure) {
      connecting
        .then(
          (c) => c.close(),
          () => undefined,
        )
        .catch(() => undefined);
      throw connectionFailure(s, e.message);
    }
    throw connectionFailure(s, (await probe) ?? explainFailure(s, flatten(e)));
  }
}

/** The worker's Rust-core connection; bounded here because it has no connect timeout of its own. */
export async function connectNativeConnection(s: TemporalSettings): Promise<NativeConnection> {
  const options = resolveOptions(s);
  // Loaded only here: CLI commands never pay for the native module.
  const { NativeConnection } = await import('@temporalio/worker');
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeFailure(`no answer within ${s.connectTimeoutMs} ms`)), s.connectTimeoutMs);
  });
  try {
    return await Promise.race([NativeConnection.connect(options), timeout]);
  } catch (e) {
    throw connectionFailure(s, e instanceof ProbeFailure ? e.message : explainFailure(s, flatten(e)));
  } finally {
    clearTimeout(timer);
  }
}

/** `127.0.0.1:7233 namespace default (TLS, API key, client certificate /etc/x.crt)`: what is in use, no secret. */
export function describeSettings(s: TemporalSettings): string {
  const tlsOn = tlsEnabled(s);
  const parts = [tlsOn ? 'TLS' : 'no TLS', s.apiKey !== undefined ? 'API key' : 'no API key'];
  if (tlsOn) {
    const cert = s.tls?.clientCert;
    parts.push(cert === undefined ? 'no client certificate' : `client certificate ${sourceName(cert)}`);
    if (s.tls?.serverName !== undefined) parts.push(`server name ${s.tls.serverName}`);
  }
  return `${s.address} namespace ${s.namespace} (${parts.join(', ')})`;
}

export function tlsEnabled(s: TemporalSettings): boolean {
  if (s.tls !== undefined) return s.tls.disabled !== true;
  return s.apiKey !== undefined;
}

/** Removes what must never be printed: the API key and any PEM private key block. */
export function redactSecrets(text: string, s: Pick<TemporalSettings, 'apiKey'>): string {
  let out = text.replace(/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g, '<key>');
  if (s.apiKey !== undefined && s.apiKey.length > 0) out = out.split(s.apiKey).join('<api key>');
  return out;
}

function resolveOptions(s: TemporalSettings): ResolvedOptions {
  if (
    s.tls !== undefined &&
    s.tls.disabled !== true &&
    (s.tls.clientCert === undefined) !== (s.tls.clientKey === undefined)
  ) {
    const missing = s.tls.clientCert === undefined ? 'client certificate' : 'client key';
    throw connectionFailure(s, `TLS ${missing} missing: set both TEMPORAL_TLS_CLIENT_CERT_PATH and ..._KEY_PATH`);
  }
  try {
    const { connectionOptions: o } = toClientOptions({
      address: s.address,
      namespace: s.namespace,
      apiKey: s.apiKey,
      tls: s.tls,
      grpcMeta: s.grpcMeta,
    });
    return { address: s.address, apiKey: o.apiKey, tls: o.tls ?? undefined, metadata: s.grpcMeta };
  } catch (e) {
    // Reading a certificate or key file failed: the message names the path, never the content.
    throw connectionFailure(s, `cannot read a TLS file: ${flatten(e)}`);
  }
}

class ProbeFailure extends Error {}

function connectionFailure(s: TemporalSettings, cause: string): PipelineError {
  const line = `cannot connect to Temporal at ${describeSettings(s)}: ${cause}`;
  return new PipelineError(ErrorType.ConnectionFailed, redactSecrets(line.replace(/\s+/g, ' '), s));
}

/** The message of an error and of its causes, one line. */
function flatten(e: unknown): string {
  const parts: string[] = [];
  let cur: unknown = e;
  for (let i = 0; i < 4 && cur !== undefined && cur !== null; i++) {
    parts.push(cur instanceof Error ? cur.message : typeof cur === 'string' ? cur : JSON.stringify(cur));
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  return parts.join(': ').replace(/\s+/g, ' ').trim();
}

/** Maps what grpc-js, the Rust core or node:tls said to a cause an operator can act on. */
export function explainFailure(s: TemporalSettings, raw: string): string {
  const name = s.tls?.serverName ?? hostOf(s.address);
  const ca = s.tls?.serverCACert === undefined ? 'the system CAs' : `the CA in ${sourceName(s.tls.serverCACert)}`;
  if (/ECONNREFUSED|connection ?refused/i.test(raw)) return `connection refused (nothing listens at ${s.address})`;
  if (/ENOTFOUND|EAI_AGAIN|failed to lookup|dns error/i.test(raw)) return `host ${hostOf(s.address)} not found`;
  if (/NotValidForName|ERR_TLS_CERT_ALTNAME_INVALID|does not match certificate's altnames/i.test(raw)) {
    return `the server's certificate is not valid for the name ${name} (TEMPORAL_TLS_SERVER_NAME)`;
  }
  if (
    /UnknownIssuer|UNABLE_TO_VERIFY_LEAF|SELF_SIGNED_CERT|self[- ]signed|UNABLE_TO_GET_ISSUER|local issuer/i.test(raw)
  ) {
    return `the server's certificate is not signed by ${ca} (TEMPORAL_TLS_SERVER_CA_CERT_PATH)`;
  }
  if (/certificate required|CertificateRequired|alert number 116|no required ssl certificate/i.test(raw)) {
    return 'the server requires a client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH)';
  }
  if (/certificate not trusted|UnknownCA|unknown ca|BadCertificate|bad certificate|certificate unknown/i.test(raw)) {
    return 'the server rejected the client certificate (not issued by a CA it trusts)';
  }
  if (/UNAUTHENTICATED|PERMISSION_DENIED|valid authentication credentials|permission|unauthori[sz]ed/i.test(raw)) {
    const said = /(?:UNAUTHENTICATED|PERMISSION_DENIED): ([^:]+)$|message: "([^"]*)"/.exec(raw);
    const detail = said?.[1] ?? said?.[2];
    const what =
      s.apiKey !== undefined ? 'the API key (TEMPORAL_API_KEY)' : 'the request: no API key set (TEMPORAL_API_KEY)';
    return `the server rejected ${what}${detail ? `: ${detail.trim()}` : ''}`;
  }
  if (
    /wrong version number|WRONG_VERSION_NUMBER|packet length too long|InvalidContentType|CorruptMessage|http request/i.test(
      raw,
    )
  ) {
    return tlsEnabled(s)
      ? 'the server does not speak TLS (TEMPORAL_TLS)'
      : 'the server expects TLS (TEMPORAL_TLS=true)';
  }
  if (/FRAME_SIZE_ERROR|http2 error|h2 protocol/i.test(raw) && !tlsEnabled(s)) {
    return 'the server does not answer plain gRPC: does it expect TLS? (TEMPORAL_TLS=true)';
  }
  if (/deadline|timed? ?out|ETIMEDOUT/i.test(raw)) return `no answer within ${s.connectTimeoutMs} ms`;
  return raw;
}

const H2_PREFACE = Buffer.concat([
  Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
  Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]), // an empty SETTINGS frame
]);

/**
 * Opens the same TCP/TLS transport the SDK would and sends the HTTP/2 preface: resolves with a cause when the
 * transport itself fails (refused, certificate checks, TLS alerts such as "certificate required"), else undefined.
 */
function probeTransport(s: TemporalSettings, o: ResolvedOptions): Promise<string | undefined> {
  const { host, port } = splitAddress(o.address);
  return new Promise((resolve) => {
    let socket: net.Socket;
    const finish = (cause: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(cause);
    };
    const timer = setTimeout(() => finish(`no answer within ${s.connectTimeoutMs} ms`), s.connectTimeoutMs);
    const onData = (d: Buffer) => {
      // A TLS record or an HTTP/1 reply where an HTTP/2 frame was expected: the two sides disagree about TLS.
      const first = d[0];
      if (!tlsEnabled(s) && (first === 0x15 || first === 0x16 || d.subarray(0, 5).toString() === 'HTTP/')) {
        finish('the server expects TLS (TEMPORAL_TLS=true)');
      } else finish(undefined);
    };
    const onError = (e: Error & { code?: string }) => finish(explainFailure(s, `${e.code ?? ''} ${e.message}`));
    if (o.tls === undefined || o.tls === false || o.tls === null) {
      socket = net.connect({ host, port }, () => socket.write(H2_PREFACE));
    } else {
      const t = o.tls === true ? {} : o.tls;
      socket = tls.connect(
        {
          host,
          port,
          servername: t.serverNameOverride ?? (net.isIP(host) ? undefined : host),
          ca: buffer(t.serverRootCACertificate),
          cert: buffer(t.clientCertPair?.crt),
          key: buffer(t.clientCertPair?.key),
          ALPNProtocols: ['h2'],
          // node:tls checks the name against the host, grpc-js against the override: check the override.
          checkServerIdentity: (_h, cert) => tls.checkServerIdentity(t.serverNameOverride ?? host, cert),
        },
        () => socket.write(H2_PREFACE),
      );
    }
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('end', () => finish(undefined));
  });
}

function buffer(data: Uint8Array | undefined): Buffer | undefined {
  return data === undefined ? undefined : Buffer.from(data);
}

function splitAddress(address: string): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(address);
  return { host: m?.[1] ?? address, port: Number(m?.[2] ?? 7233) };
}

function hostOf(address: string): string {
  return splitAddress(address).host;
}

function sourceName(src: { path: string } | { data: string | Uint8Array }): string {
  return 'path' in src ? src.path : '(inline data)';
}
