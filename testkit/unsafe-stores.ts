/**
 * Test-only: the stores with one protection taken away, the proofs that the tests of that protection can fail.
 * Production code has no option or variable for any of these: a test, or a test-only entry point (alloc-client.ts,
 * unsafe-worker.ts, bench/alloc-proc.ts), builds them here from the same settings `openStore()` reads.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { PoolClient } from 'pg';
import { z } from 'zod';
import type { AllocationRequest, AllocationResult, EpisodeStore } from '../src/store/episode-store';
import { FileEpisodeStore } from '../src/store/file-store';
import { openStore, type StoreSelection } from '../src/store/open-store';
import { DirectoryLock, PipelineLock, type LockGuard, type LockOptions } from '../src/store/pipeline-lock';
import { PostgresEpisodeStore } from '../src/store/postgres-store';
import { lockOptionsFromEnv, storeEnvironment } from '../src/store/store-config';
import { failpoint } from '../src/failpoints';
import type { EpisodeId } from '../src/domain/episode-id';
import { ErrorType, PipelineError } from '../src/domain/errors';
import type { EpisodeState } from '../src/domain/episode-state';

export const unsafeVariantSchema = z.enum([
  /** Allocation without the pipeline lock (file: no lock directory; PostgreSQL: no advisory lock). */
  'no-lock',
  /** PostgreSQL: the allocation decides in one transaction and inserts in another. */
  'split-allocation',
  /** File store: a holder is taken over only once stale, never on the kernel's proof that it died. */
  'stale-only-lock',
  /** A submission's intent is invisible to its retry (as if not saved before the send): a retry after a lost reply sends again. */
  'no-intent',
  /** The store refuses to re-assert an allocation it forgot: the run's episode stays unknown. */
  'no-reassert',
  /**
   * File store: its locks (pipeline and episodes') still taken, but without their fence (lock-fence.ts): commits
   * staged beside the data dir, and a holder refused only once its heartbeat failed, as before decision 0014.
   */
  'no-fence',
]);
export type UnsafeVariant = z.infer<typeof unsafeVariantSchema>;

/** The store `openStore(selection)` would open, with `variant`'s protection removed (none: the real store). */
export function openUnsafeStore(variant: UnsafeVariant | undefined, selection: StoreSelection = {}): EpisodeStore {
  if (variant === undefined) return openStore(selection);
  if (variant === 'no-intent') return withoutIntents(openStore(selection));
  if (variant === 'no-reassert') return withoutReassertion(openStore(selection));
  const env = storeEnvironment();
  const lock = lockOptionsFromEnv();
  // openStore's precedence: an explicit URL, then an explicit data dir, then the environment's URL.
  const url = selection.storeUrl ?? (selection.dataDir === undefined ? env.storeUrl : undefined);
  if (url) {
    const options = {
      url,
      mediaDir: selection.mediaDir,
      applicationName: selection.applicationName,
      lockTimeoutMs: lock.timeoutMs,
      staleMs: lock.staleMs,
    };
    if (variant === 'no-lock') return new UnlockedPostgresStore(options);
    if (variant === 'split-allocation') return new SplitAllocationPostgresStore(options);
  } else {
    const dataDir = selection.dataDir ?? env.dataDir;
    if (variant === 'no-lock') return new UnlockedFileStore(dataDir, lock);
    if (variant === 'stale-only-lock') return new FileEpisodeStore(dataDir, { ...lock, holderProvenDead: () => false });
    if (variant === 'no-fence') return new UnfencedFileStore(dataDir, lock);
  }
  throw new Error(`no ${variant} variant of the ${url ? 'PostgreSQL' : 'file'} store`);
}

/**
 * A pipeline lock that is never taken. Its writes are staged beside the data dir (same filesystem), where the real
 * lock stages them in the holder's fence: an allocation stages the new episode's state before its directory exists.
 */
class NoPipelineLock extends PipelineLock {
  override withLock<T>(critical: (guard: LockGuard) => Promise<T>): Promise<T> {
    return critical({ assertHeld: () => undefined, commitPrefix: stagingBeside(this.dataDir) });
  }
}

/** Where a commit's temp file goes without a fence: a folder beside the data dir (same file system). */
function stagingBeside(dataDir: string): (file: string) => string {
  const staging = `${dataDir}.unsafe-staging`;
  mkdirSync(staging, { recursive: true });
  return (file) => path.join(staging, file.replace(/[^A-Za-z0-9.-]/g, '_'));
}

/**
 * The file store with its locks' fence removed (decision 0014): every lock is taken as before, but a commit stages its
 * temp file beside the data dir, not in the holder's fence, so a rename is no longer refused once the lock has moved;
 * and the guard no longer looks at the fence (the holder's entry gone), only at the heartbeat. A holder frozen past
 * the stale time and taken over can then, once resumed, commit what it began before its heartbeat notices.
 */
export class UnfencedFileStore extends FileEpisodeStore {
  constructor(dataDir: string, lockOptions: LockOptions) {
    super(dataDir, lockOptions);
    removeFenceUnder(this.dataDir);
  }
}

/** Data dirs whose locks go without their fence (the episode locks are made inside the store, hence here). */
const unfenced = new Set<string>();

function removeFenceUnder(dataDir: string): void {
  if (unfenced.size === 0) {
    const fencedWithLock = Reflect.get<DirectoryLock, 'withLock'>(DirectoryLock.prototype, 'withLock');
    DirectoryLock.prototype.withLock = function <T>(
      this: DirectoryLock,
      critical: (guard: LockGuard) => Promise<T>,
    ): Promise<T> {
      const root = [...unfenced].find((d) => this.lockPath.startsWith(`${d}${path.sep}`));
      if (root === undefined) return fencedWithLock.call(this, critical) as Promise<T>;
      const stage = stagingBeside(root);
      const note = (why: string) => appendFileSync(`${root}.no-fence.log`, `${new Date().toISOString()} ${why}\n`);
      return fencedWithLock.call(this, (guard) => critical(heartbeatOnly(guard, stage, note))) as Promise<T>;
    };
  }
  unfenced.add(dataDir);
}

/** A refusal that came from the fence (lock-fence.ts, `moved()`), not from the heartbeat. */
const FENCE_REFUSAL = /taken over by another process while this one was frozen/;

/**
 * The lock's guard without its fence: a commit staged at `stage`, refused only when the heartbeat failed. Each time
 * the fence would have refused, `note` hears of it (beside the data dir: the proof's evidence).
 */
function heartbeatOnly(guard: LockGuard, stage: (file: string) => string, note: (why: string) => void): LockGuard {
  const assertHeld = () => {
    try {
      guard.assertHeld();
    } catch (e) {
      const fence = e instanceof PipelineError && e.type === ErrorType.LockCompromised && FENCE_REFUSAL.test(e.message);
      note(
        `pid ${process.pid}: ${e instanceof Error ? e.message : String(e)}; ${fence ? 'goes on without the fence' : 'refused'}`,
      );
      if (!fence) throw e;
    }
  };
  return {
    assertHeld,
    commitPrefix: (file) => {
      assertHeld();
      return stage(file);
    },
  };
}

/** The file store without its pipeline lock (the allocator looks the lock up on each allocation). */
export class UnlockedFileStore extends FileEpisodeStore {
  override readonly lock: PipelineLock = new NoPipelineLock(this.dataDir);
}

/** PostgreSQL without the advisory lock: only the schema's constraints are left. */
export class UnlockedPostgresStore extends PostgresEpisodeStore {
  protected override async takePipelineLock(_client: PoolClient): Promise<void> {}
}

/** PostgreSQL deciding under the lock in one transaction and inserting in a second one. */
export class SplitAllocationPostgresStore extends PostgresEpisodeStore {
  protected override async allocateOnce(request: AllocationRequest): Promise<AllocationResult> {
    const decision = await this.transaction('allocate (split, unsafe)', (client) => this.decide(client, request));
    if (decision.kind === 'existing') {
      const { episodeId, weekId, sequence } = decision.episode;
      return { episodeId, weekId, sequence, created: false };
    }
    await failpoint('allocation.decided');
    await this.transaction('allocate (split, unsafe)', async (client) => {
      await this.takePipelineLock(client);
      await this.insertEpisode(client, this.newState(request, decision));
    });
    return { episodeId: decision.episodeId, weekId: request.weekId, sequence: decision.sequence, created: true };
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
