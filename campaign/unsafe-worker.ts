/**
 * TEST-ONLY worker entry: the real worker (src/worker.ts) with one protection taken out of its store, injected here,
 * so that the campaign can show its checker finds what that protection prevents. Selected by the campaign's
 * `--unsafe <variant>` (an argument of this entry point; nothing in src/ reads a switch for it). Never deploy it.
 *
 *   no-lock      the file store's pipeline lock does nothing: allocations race (duplicate episodes)
 *   no-intent    a submission's intent is invisible to its retry (as if not saved before the send): a retry after a
 *                lost reply sends again
 *   no-reassert  the store refuses to re-assert an allocation it forgot (and the campaign runs no `episodes repair`)
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { PipelineError } from '../src/domain/errors';
import { ErrorType } from '../src/shared';
import type { EpisodeId } from '../src/domain/episode-id';
import type { EpisodeState } from '../src/domain/episode-state';
import type { EpisodeStore } from '../src/store/episode-store';
import { FileEpisodeStore } from '../src/store/file-store';
import type { LockGuard } from '../src/store/pipeline-lock';
import { prepareStore } from '../src/store/open-store';
import { loadConfig } from '../src/config';
import { installTelemetry, loadTelemetryConfig } from '../src/telemetry';
import { buildDeps, createWorker } from '../src/worker';

export const UNSAFE_VARIANTS = ['no-lock', 'no-intent', 'no-reassert'] as const;
type Variant = (typeof UNSAFE_VARIANTS)[number];

function unsafe(variant: Variant, store: EpisodeStore): EpisodeStore {
  switch (variant) {
    case 'no-lock': {
      if (!(store instanceof FileEpisodeStore)) throw new Error('no-lock: the file store only');
      // Commits are staged beside the data dir (same filesystem) instead of in the lock holder's fence.
      const staging = `${store.dataDir}.unsafe-staging`;
      mkdirSync(staging, { recursive: true });
      const noLock = {
        withLock: <T>(critical: (guard: LockGuard) => Promise<T>) =>
          critical({
            assertHeld: () => undefined,
            commitPrefix: (file: string) => path.join(staging, file.replace(/[^A-Za-z0-9.-]/g, '_')),
          }),
      };
      (store as unknown as { lock: unknown }).lock = noLock;
      return store;
    }
    case 'no-intent':
      return withoutIntents(store);
    case 'no-reassert':
      return withoutReassertion(store);
  }
}

/** The store refuses to write back a forgotten allocation, as before it could: the run's episode stays unknown. */
function withoutReassertion(store: EpisodeStore): EpisodeStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop !== 'reassertAllocation') return Reflect.get(target, prop, receiver) as unknown;
      const refuse: EpisodeStore['reassertAllocation'] = (claim) =>
        Promise.reject(
          new PipelineError(
            ErrorType.EpisodeNotFound,
            `episode ${claim.episodeId} does not exist (re-assertion removed)`,
          ),
        );
      return refuse;
    },
  });
}

/**
 * A submission's intent is never there when a retry looks: reads show a step whose only record is its intent as if
 * nothing was saved before the send. (Writes go through, so that the first attempt's own records stay whole.)
 */
function withoutIntents(store: EpisodeStore): EpisodeStore {
  const hide = (s: EpisodeState): EpisodeState => ({
    ...s,
    steps: Object.fromEntries(Object.entries(s.steps).filter(([, r]) => r.status !== 'intent')),
  });
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'requireEpisode') return (id: EpisodeId) => target.requireEpisode(id).then(hide);
      if (prop === 'getEpisode') return (id: EpisodeId) => target.getEpisode(id).then((s) => s && hide(s));
      // Everything else on the store itself: its own reads inside a write see the real records.
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function main(): Promise<void> {
  const variant = process.argv[2] as Variant;
  if (!UNSAFE_VARIANTS.includes(variant)) throw new Error(`usage: unsafe-worker.js ${UNSAFE_VARIANTS.join('|')}`);
  const logger = installTelemetry(loadTelemetryConfig());
  const config = loadConfig();
  const deps = buildDeps(config, logger);
  deps.store = unsafe(variant, deps.store);
  await prepareStore(deps.store, { onRetry: (line) => console.error(`worker: waiting for the store: ${line}`) });
  const { worker, connection } = await createWorker(config, deps, {}, logger);
  logger.info(`worker: task queue ${config.taskQueue} (UNSAFE TEST BUILD: ${variant}), ${deps.store.description}`);
  try {
    await worker.run();
  } finally {
    await deps.store.close();
    await connection.close();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(`worker failed: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
