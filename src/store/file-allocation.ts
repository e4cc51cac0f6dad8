/**
 * The file store's allocation: under the pipeline lock, read the key's and the week's indexes, decide (the domain's
 * rule), and for a new episode commit its key file, week index (THE COMMIT POINT) and state, in that order. A crashed
 * allocation's leftovers are repaired here too: temp files swept, committed entries without a state rolled forward.
 */
import { rmSync } from 'node:fs';
import * as path from 'node:path';
import {
  decideAllocation,
  decideReassertion,
  type AllocationDecision,
  type AllocationFacts,
  type StoredEpisodeRef,
} from '../domain/allocation';
import type { AllocationKey } from '../domain/allocation-key';
import { parseEpisodeId } from '../domain/episode-id';
import { episodeStateSchema } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import type { WeekId } from '../domain/week-id';
import { failpoint } from '../failpoints';
import { exists, type StagedFile } from '../files/durable-fs';
import type { AllocationClaim, AllocationRequest, AllocationResult } from './episode-store';
import {
  keyIndexSchema,
  stateFromEntry,
  type FileLayout,
  type KeyIndex,
  type WeekIndex,
  type WeekIndexEntry,
} from './file-layout';
import type { LockGuard, PipelineLock } from './pipeline-lock';

/** An allocation's new episode, decided but not yet written. */
interface NewEpisode {
  weekId: WeekId;
  key: AllocationKey;
  entry: WeekIndexEntry;
  keyIndex: KeyIndex;
  weekIndex: WeekIndex;
}

export class FileAllocator {
  private tempsSwept = false;

  /** The store's layout and its pipeline lock, looked up on each allocation (a test may swap the lock). */
  constructor(private readonly layout: FileLayout & { readonly lock: PipelineLock }) {}

  /** Under the pipeline lock: read, decide, and (for a new episode) commit, as one critical section. */
  async allocate(request: AllocationRequest): Promise<AllocationResult> {
    await this.layout.ensureLayout();
    return this.layout.lock.withLock(async (guard) => {
      await this.sweepLeftoverTemps();
      const { result, created } = await this.decide(
        { key: request.allocationKey, weekId: request.weekId },
        (facts) => decideAllocation({ ...facts, recorded: request.recorded }),
        { created_at: new Date().toISOString(), allocated_by: request.allocatedBy },
        guard,
      );
      if (created) await this.commitAllocation(created, guard);
      return result;
    });
  }

  /** Re-asserts a forgotten allocation (`decideReassertion`), as one critical section like `allocate`. */
  async reassert(claim: AllocationClaim): Promise<AllocationResult> {
    await this.layout.ensureLayout();
    return this.layout.lock.withLock(async (guard) => {
      await this.sweepLeftoverTemps();
      const { weekId, sequence } = parseEpisodeId(claim.episodeId);
      const { result, created } = await this.decide(
        { key: claim.allocationKey, weekId },
        (facts) => decideReassertion(facts, { episodeId: claim.episodeId, sequence }),
        { created_at: claim.createdAt, allocated_by: claim.allocatedBy },
        guard,
      );
      if (created) await this.commitAllocation(created, guard);
      return result;
    });
  }

  /** The request's decision against the store; a new episode is only planned here (see commitAllocation). */
  private async decide(
    { key, weekId }: { key: AllocationKey; weekId: WeekId },
    rule: (facts: AllocationFacts) => AllocationDecision,
    recorded: Pick<WeekIndexEntry, 'created_at' | 'allocated_by'>,
    guard: LockGuard,
  ): Promise<{ result: AllocationResult; created?: NewEpisode }> {
    const weekIndex = this.layout.readWeekIndex(weekId);
    const keyMatches = this.committedKeyMatches(key, this.readKeyIndex(key), weekIndex, (id) =>
      this.layout.readWeekIndex(id),
    );
    const decision = rule({ key, weekId, keyMatches, weekEpisodes: weekIndex.episodes.map((e) => toRef(weekId, e)) });
    await this.rollForward(weekIndex, guard);

    if (decision.kind === 'existing') {
      const entry = weekIndex.episodes.find((e) => e.episode_id === decision.episode.episodeId);
      if (entry) await this.ensureState(weekId, entry, guard);
      return { result: { ...identityOf(decision.episode), created: false } };
    }

    const entry: WeekIndexEntry = {
      episode_id: decision.episodeId,
      sequence: decision.sequence,
      allocation_key: key,
      ...recorded,
    };
    if (exists(this.layout.episodeDir(decision.episodeId))) {
      throw new PipelineError(
        ErrorType.StoreCorrupt,
        `${this.layout.episodeDir(decision.episodeId)} exists but ${this.layout.weekIndexPath(weekId)} does not list it; ` +
          'refusing to overwrite (run `episodes verify`)',
        { episodes: [decision.episodeId] },
      );
    }
    const keyIndex: KeyIndex = {
      schema: 'key-index/v1',
      allocation_key: key,
      episodes: [
        ...keyMatches.map((m) => ({ episode_id: m.episodeId, week_id: m.weekId })),
        { episode_id: decision.episodeId, week_id: weekId },
      ],
    };
    const weekAfter: WeekIndex = { ...weekIndex, episodes: [...weekIndex.episodes, entry] };
    return {
      result: { episodeId: decision.episodeId, weekId, sequence: decision.sequence, created: true },
      created: { weekId, key, entry, keyIndex, weekIndex: weekAfter },
    };
  }

  /**
   * Writes a new episode. Its three files are staged (key file, week index, state, so failpoints count them in that
   * order) and flushed together, then committed in order.
   */
  private async commitAllocation(created: NewEpisode, guard: LockGuard): Promise<void> {
    await failpoint('allocation.decided');
    const { weekId, key, entry } = created;
    const staged: StagedFile[] = [];
    try {
      // Staged in the lock holder's fence (lock-fence.ts): once the lock has moved, no commit below can happen.
      const keyFile = await this.layout.stage(this.layout.keyIndexPath(key), created.keyIndex, guard);
      staged.push(keyFile);
      const weekFile = await this.layout.stage(this.layout.weekIndexPath(weekId), created.weekIndex, guard);
      staged.push(weekFile);
      const stateFile = await this.layout.stage(
        this.layout.statePath(entry.episode_id),
        stateFromEntry(weekId, entry),
        guard,
      );
      staged.push(stateFile);
      await Promise.all(staged.map((f) => f.flush()));
      // 1. The key file first, so that from the commit on the key can be found from any week.
      guard.assertHeld();
      await keyFile.commit();
      await failpoint('allocation.key-written');
      // 2. The commit point.
      guard.assertHeld();
      await weekFile.commit();
      await failpoint('allocation.index-written');
      // 3. The episode's directory and state. The bytes are already on disk; the new directory entries are not synced,
      // because losing them to a power cut loses nothing: a committed episode without its state file is rolled
      // forward from the index (and the first change of the episode syncs them, see updateEpisode).
      guard.assertHeld();
      this.layout.mkdirNow(this.layout.episodeDir(entry.episode_id));
      await stateFile.commit({ syncDir: false });
    } catch (e) {
      await Promise.all(staged.map((f) => f.discard()));
      throw e;
    }
    await failpoint('allocation.state-written');
  }

  private readKeyIndex(key: AllocationKey): KeyIndex | undefined {
    const file = this.layout.keyIndexPath(key);
    const index = this.layout.read(file, keyIndexSchema);
    if (index && index.allocation_key !== key) {
      throw new PipelineError(ErrorType.StoreCorrupt, `${file}: belongs to another allocation key`, { file });
    }
    return index;
  }

  /** Key-file entries confirmed by their week's index; the rest are leftovers of allocations that never committed. */
  private committedKeyMatches(
    key: AllocationKey,
    keyIndex: KeyIndex | undefined,
    targetWeek: WeekIndex,
    weekOf: (weekId: WeekId) => WeekIndex,
  ): StoredEpisodeRef[] {
    const refs: StoredEpisodeRef[] = [];
    for (const hint of keyIndex?.episodes ?? []) {
      const week = hint.week_id === targetWeek.week_id ? targetWeek : weekOf(hint.week_id);
      const entry = week.episodes.find((e) => e.episode_id === hint.episode_id);
      if (entry && entry.allocation_key === key) refs.push(toRef(week.week_id, entry));
    }
    return refs;
  }

  /**
   * Committed allocations whose process died before their state files were written: an allocation writes its state
   * right after its commit, and a week only grows once its entries all have states (this runs first), so after a
   * crashed process only a trailing run of entries can lack one (one entry; several from a version that batched). One read when nothing is missing. (After a power cut
   * an earlier entry's unsynced state can be missing too: it is read from the index, and written by the first update
   * of that episode or the next allocation of its key, as before.)
   */
  private async rollForward(weekIndex: WeekIndex, guard: LockGuard): Promise<void> {
    for (const entry of [...weekIndex.episodes].reverse()) {
      if (!(await this.ensureState(weekIndex.week_id, entry, guard))) return;
    }
  }

  /** Writes the entry's state if it is missing (true), else checks the one there (false). */
  private async ensureState(weekId: WeekId, entry: WeekIndexEntry, guard: LockGuard): Promise<boolean> {
    const file = this.layout.statePath(entry.episode_id);
    const state = this.layout.read(file, episodeStateSchema);
    if (state) {
      this.layout.checkIdentity(entry.episode_id, state, file);
      if (state.allocation_key !== entry.allocation_key) {
        throw new PipelineError(
          ErrorType.StoreCorrupt,
          `${file}: allocation key differs from ${this.layout.weekIndexPath(weekId)}`,
          { file },
        );
      }
      return false;
    }
    guard.assertHeld();
    await this.layout.mkdir(this.layout.episodeDir(entry.episode_id));
    await this.layout.write(file, stateFromEntry(weekId, entry), guard);
    return true;
  }

  /**
   * Removes the `.tmp` files that killed writers of earlier versions left in the index directories (temp files are now
   * staged in the lock holder's fence, removed with its lock), once per store object, under the lock. Every write there
   * happened under the lock and ended in a rename or a removal of its temp file, so a temp file seen while holding the
   * lock belongs to nobody. Once, because listing every week's index on every allocation would make its cost grow.
   */
  private async sweepLeftoverTemps(): Promise<void> {
    if (this.tempsSwept) return;
    for (const dir of ['index/keys', 'index/weeks'].map((d) => path.join(this.layout.dataDir, d))) {
      for (const name of await this.layout.list(dir)) {
        if (name.endsWith('.tmp')) rmSync(path.join(dir, name), { force: true });
      }
    }
    this.tempsSwept = true;
  }
}

function toRef(weekId: WeekId, e: WeekIndexEntry): StoredEpisodeRef {
  return { episodeId: e.episode_id, weekId, sequence: e.sequence, allocationKey: e.allocation_key };
}

function identityOf(ref: StoredEpisodeRef): Omit<AllocationResult, 'created'> {
  return { episodeId: ref.episodeId, weekId: ref.weekId, sequence: ref.sequence };
}
