/**
 * Vendor callbacks (webhooks): `POST /callbacks/<adapter>?ref=<episode:step:rN>`, checked by the adapter the path
 * names (signature, its own ref) before the store is read, then matched to the step's vendor and applied under the
 * episode's lock by `onCallback` (domain/pay-once.ts): a callback only fills a step's empty job reference, so a
 * redelivered, late or duplicate one changes nothing, and a parked step (unknown submission outcome) is reconciled to
 * the vendor's job and signalled, as `episodes reconcile` would.
 * Everything else is polled as before: with no receiver set up, nothing is lost but that shortcut.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import { paidStepSchema, type PaidStep } from '../domain/paid-step';
import { stepKey } from '../domain/names';
import { onCallback, type CallbackVerdict } from '../domain/pay-once';
import { PipelineError, ErrorType } from '../domain/errors';
import { readSettings } from '../settings/read';
import type { EpisodeStore } from '../store/episode-store';
import { CALLBACK_REF_QUERY, type Vendors } from '../vendors/port';

/** A callback is a small JSON body: anything larger is refused unread. */
export const MAX_CALLBACK_BYTES = 64 * 1024;

export interface CallbackReceiverDeps {
  store: EpisodeStore;
  vendors: Vendors;
  /** Tells the step's workflow its parked submission was settled (the `reconciled` signal). */
  signalReconciled(id: EpisodeId, step: PaidStep, round: number): Promise<void>;
  log(line: string): void;
}

export interface CallbackReceiver {
  url: string;
  close(): Promise<void>;
}

const REF = /^(.{1,64}):([a-z]{1,16}):r(0|[1-9]\d{0,3})$/;

interface Answer {
  status: number;
  text: string;
}

/** Reads, checks and applies one callback; every refusal is a status and a line in the log. */
export async function receiveCallback(
  deps: CallbackReceiverDeps,
  req: { method: string; url: URL; headers: Readonly<Record<string, string | undefined>>; body: Buffer },
): Promise<Answer> {
  const adapterName = /^\/callbacks\/([a-z][a-z0-9-]{0,31})$/.exec(req.url.pathname)?.[1];
  if (req.method !== 'POST' || !adapterName) return { status: 404, text: 'not found' };
  const ref = req.url.searchParams.get(CALLBACK_REF_QUERY) ?? '';
  const [, rawId = '', rawStep, rawRound] = REF.exec(ref) ?? [];
  const step = paidStepSchema.safeParse(rawStep);
  let id: EpisodeId;
  try {
    id = parseEpisodeId(rawId).episodeId;
  } catch {
    return { status: 400, text: 'bad ref' };
  }
  if (!step.success) return { status: 400, text: 'bad ref' };
  const round = Number(rawRound);
  const key = stepKey(step.data, round);
  // Authenticate before any work for the caller: the path names the adapter, whose signature needs no step or model.
  const reader = await deps.vendors.openCallbacks(adapterName);
  if (!reader) return { status: 404, text: 'this vendor sends no callbacks' };
  let callback;
  try {
    callback = await reader.readCallback({ url: req.url, headers: req.headers, body: req.body });
  } catch (e) {
    deps.log(`callback for ${ref} refused: ${e instanceof Error ? e.message : String(e)}`);
    return { status: 401, text: 'refused' };
  }
  if (callback.ref !== ref) {
    deps.log(`callback for ${ref} refused: the vendor's body names ${callback.ref}`);
    return { status: 400, text: 'ref mismatch' };
  }
  const record = (await deps.store.getEpisode(id))?.steps[key];
  const vendorName = record?.vendor ?? deps.vendors.assigned(step.data);
  if (vendorName.split(':')[0] !== adapterName) return { status: 404, text: 'not this step’s vendor' };
  let verdict = { duplicate: true } as CallbackVerdict;
  const at = new Date().toISOString();
  await deps.store.updateEpisode(id, (s) => {
    verdict = onCallback(s.steps[key], callback.jobId);
    const r = s.steps[key];
    if (!('adopt' in verdict) || !r) return s;
    const reconciliation = verdict.wasParked
      ? { resolution: 'remote-job' as const, by: `${adapterName} callback`, at }
      : r.reconciliation;
    const adopted = { ...r, status: 'submitted' as const, remote_job_id: callback.jobId, submitted_at: at };
    return { ...s, steps: { ...s.steps, [key]: { ...adopted, reconciliation, error: null } } };
  });
  const applied = verdict;
  if ('refuse' in applied) deps.log(`callback for ${ref} (job ${callback.jobId}) not applied: ${applied.refuse}`);
  if ('adopt' in applied && applied.wasParked) await deps.signalReconciled(id, step.data, round);
  // 2xx for anything verified, so the vendor stops redelivering: a refusal to apply is the operator's, not its.
  return { status: 200, text: 'adopt' in applied ? 'adopted' : 'duplicate' in applied ? 'duplicate' : 'not applied' };
}

export interface CallbackSettings {
  listen: string;
  publicUrl: URL;
}

/** EPISODES_CALLBACK_LISTEN and EPISODES_CALLBACK_PUBLIC_URL, both or neither; none: no callbacks. */
export function callbackSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): CallbackSettings | undefined {
  const s = readSettings(['EPISODES_CALLBACK_LISTEN', 'EPISODES_CALLBACK_PUBLIC_URL'], env);
  if (s.EPISODES_CALLBACK_LISTEN === undefined && s.EPISODES_CALLBACK_PUBLIC_URL === undefined) return undefined;
  const problem = (why: string) => new PipelineError(ErrorType.InvalidInput, `EPISODES_CALLBACK_PUBLIC_URL ${why}`);
  if (s.EPISODES_CALLBACK_LISTEN === undefined || s.EPISODES_CALLBACK_PUBLIC_URL === undefined) {
    throw new PipelineError(
      ErrorType.InvalidInput,
      'set both EPISODES_CALLBACK_LISTEN and EPISODES_CALLBACK_PUBLIC_URL, or neither',
    );
  }
  let url: URL;
  try {
    url = new URL(s.EPISODES_CALLBACK_PUBLIC_URL);
  } catch {
    throw problem('is not a URL');
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw problem('must be https (http only to localhost)');
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw problem('must have no query, fragment or credentials');
  }
  return { listen: s.EPISODES_CALLBACK_LISTEN, publicUrl: url };
}

/**
 * A client that stalls is cut off (408) once its headers took 5 s or its whole request 10 s. Node checks those limits
 * every `connectionsCheckingInterval` (its default, 30 s, would let a stalled request hold a connection 35-40 s).
 */
export const CALLBACK_SERVER_LIMITS = {
  headersTimeout: 5_000,
  requestTimeout: 10_000,
  connectionsCheckingInterval: 1_000,
};

/** Listens on `host:port` (e.g. 127.0.0.1:8791 behind the TLS front end the vendors reach). */
export async function startCallbackReceiver(deps: CallbackReceiverDeps, listen: string): Promise<CallbackReceiver> {
  const server = http.createServer(CALLBACK_SERVER_LIMITS, (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const answer = (a: Answer) => {
      if (!res.headersSent) res.writeHead(a.status, { 'content-type': 'text/plain' }).end(a.text);
    };
    if (Number(req.headers['content-length'] ?? 0) > MAX_CALLBACK_BYTES) {
      // Declared too large: refused before a byte of the body is read.
      answer({ status: 413, text: 'too large' });
      req.destroy();
      return;
    }
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_CALLBACK_BYTES) {
        answer({ status: 413, text: 'too large' });
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      if (size > MAX_CALLBACK_BYTES) return;
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]),
      );
      const url = new URL(req.url ?? '/', 'http://callback.invalid');
      receiveCallback(deps, { method: req.method ?? '', url, headers, body: Buffer.concat(chunks) }).then(
        answer,
        (e) => {
          deps.log(`callback failed: ${e instanceof Error ? e.message : String(e)}`);
          answer({ status: 500, text: 'failed' });
        },
      );
    });
  });
  server.maxConnections = 64;
  const at = listen.lastIndexOf(':');
  const host = listen.slice(0, at).replace(/^\[|\]$/g, '');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(listen.slice(at + 1)), host, resolve);
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
