/**
 * `episodes verify` over the file store, read-only: every file is read directly (never through a store method that
 * takes the lock or creates directories), a file that does not parse is one problem and not the end of the check, and
 * the file store's own structure is checked: index/weeks (the commit point) against episodes/<id>/, key files, and
 * legacy (week-v1) data still waiting for `episodes migrate-legacy`.
 */
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parseEpisodeId, type EpisodeId } from '../domain/episode-id';
import { episodeStateSchema, historyEntrySchema, type EpisodeState, type HistoryEntry } from '../domain/episode-state';
import { parseWeekId } from '../domain/week-id';
import { LEGACY_WEEK_KEY } from '../legacy-migration/legacy-format';
import { planMigration } from '../legacy-migration/plan';
import { FileEpisodeStore, keyIndexSchema, weekIndexSchema, type WeekIndexEntry } from '../store/file-store';
import { ProblemCode, problem, type Problem } from '../domain/problem';
import { isDirectory, listNames, parseBytes, readBytesIfExists, requireDataDir } from '../files/read-only-fs';
import type { LoadedStore, Located, VerifySource } from './source';

export function fileStoreSource(dataDir: string): VerifySource {
  // Used for its path helpers only: its writing methods (allocate, updateEpisode, appendHistory) are never called.
  const store = new FileEpisodeStore(dataDir);
  return {
    description: store.description,
    evidenceBase: store.dataDir,
    episodeDir: (id) => store.episodeDir(id),
    load: () => loadFileStore(store),
  };
}

async function loadFileStore(store: FileEpisodeStore): Promise<LoadedStore> {
  await requireDataDir(store.dataDir);
  const problems: Problem[] = [];
  const episodes = await loadStates(store, problems);
  const history = await loadHistory(store, problems);
  const index = await loadWeekIndexes(store, problems);
  problems.push(...(await checkStructure(store, episodes, index)));
  problems.push(...(await legacyProblems(store)));
  return { episodes: [...episodes.values()], history, problems };
}

async function loadStates(
  store: FileEpisodeStore,
  problems: Problem[],
): Promise<Map<EpisodeId, Located<EpisodeState>>> {
  const states = new Map<EpisodeId, Located<EpisodeState>>();
  const dir = path.join(store.dataDir, 'episodes');
  for (const name of await listNames(dir)) {
    if (LEGACY_WEEK_KEY.test(name)) continue; // week-v1 directories: see legacyProblems
    const entry = path.join(dir, name);
    let id: EpisodeId;
    try {
      id = parseEpisodeId(name).episodeId;
    } catch {
      problems.push(problem(ProblemCode.UnexpectedEntry, 'not an episode directory name', { file: entry }));
      continue;
    }
    if (!(await isDirectory(entry))) {
      problems.push(problem(ProblemCode.UnexpectedEntry, 'not a directory', { episode_id: id, file: entry }));
      continue;
    }
    const file = store.statePath(id);
    const bytes = await readBytesIfExists(file);
    if (!bytes) {
      problems.push(
        problem(ProblemCode.StateMissing, 'episode directory without state.json', { episode_id: id, file }),
      );
      continue;
    }
    const parsed = parseBytes(file, bytes, episodeStateSchema);
    if (!parsed.ok) {
      problems.push(problem(ProblemCode.StateSchema, parsed.message, { episode_id: id, file }));
      continue;
    }
    if (parsed.value.episode_id !== id) {
      problems.push(
        problem(ProblemCode.IdMismatch, `holds episode ${parsed.value.episode_id}`, { episode_id: id, file }),
      );
    }
    states.set(id, { value: parsed.value, file });
  }
  return states;
}

async function loadHistory(store: FileEpisodeStore, problems: Problem[]): Promise<Located<HistoryEntry>[]> {
  const entries: Located<HistoryEntry>[] = [];
  const dir = path.join(store.dataDir, 'history');
  for (const name of await listNames(dir)) {
    if (!name.endsWith('.json')) continue; // e.g. a temp file of an interrupted atomic write: never read by the store
    const file = path.join(dir, name);
    const id = name.slice(0, -'.json'.length);
    const bytes = await readBytesIfExists(file);
    const parsed = bytes ? parseBytes(file, bytes, historyEntrySchema) : undefined;
    if (!parsed?.ok) {
      problems.push(problem(ProblemCode.HistorySchema, parsed?.message ?? 'unreadable', { episode_id: id, file }));
      continue;
    }
    if (parsed.value.episode_id !== id) {
      problems.push(
        problem(ProblemCode.IdMismatch, `holds episode ${parsed.value.episode_id}`, { episode_id: id, file }),
      );
    }
    entries.push({ value: parsed.value, file });
  }
  return entries;
}

type IndexedEpisode = WeekIndexEntry & { week_id: string; file: string };

async function loadWeekIndexes(store: FileEpisodeStore, problems: Problem[]): Promise<IndexedEpisode[]> {
  const indexed: IndexedEpisode[] = [];
  const dir = path.join(store.dataDir, 'index', 'weeks');
  for (const name of await listNames(dir)) {
    if (!name.endsWith('.json')) continue;
    const file = path.join(dir, name);
    const bytes = await readBytesIfExists(file);
    const parsed = bytes ? parseBytes(file, bytes, weekIndexSchema) : undefined;
    if (!parsed?.ok) {
      problems.push(problem(ProblemCode.IndexSchema, parsed?.message ?? 'unreadable', { file }));
      continue;
    }
    const index = parsed.value;
    let weekOk = true;
    try {
      weekOk = parseWeekId(name.slice(0, -'.json'.length)) === index.week_id;
    } catch {
      weekOk = false;
    }
    if (!weekOk) problems.push(problem(ProblemCode.IndexSchema, `holds week ${index.week_id}`, { file }));
    const sequences = new Map<number, string>();
    for (const entry of index.episodes) {
      const where = { episode_id: entry.episode_id, file };
      if (entry.episode_id !== `${index.week_id}-${entry.sequence}`) {
        problems.push(
          problem(ProblemCode.IdMismatch, `indexed with sequence ${entry.sequence} in ${index.week_id}`, where),
        );
      }
      const other = sequences.get(entry.sequence);
      if (other !== undefined) {
        problems.push(
          problem(ProblemCode.DuplicateSequence, `sequence ${entry.sequence} also indexed for ${other}`, where),
        );
      }
      sequences.set(entry.sequence, entry.episode_id);
      indexed.push({ ...entry, week_id: index.week_id, file });
    }
  }
  return indexed;
}

/** The index is the commit point: every indexed episode has its state, every episode directory is indexed. */
async function checkStructure(
  store: FileEpisodeStore,
  states: Map<EpisodeId, Located<EpisodeState>>,
  indexed: IndexedEpisode[],
): Promise<Problem[]> {
  const problems: Problem[] = [];
  const indexedIds = new Set<string>(indexed.map((e) => e.episode_id));
  for (const entry of indexed) {
    const where = { episode_id: entry.episode_id, file: entry.file };
    const state = states.get(entry.episode_id)?.value;
    if (!state) {
      if (!(await isDirectory(store.episodeDir(entry.episode_id)))) {
        problems.push(
          problem(
            ProblemCode.IndexedWithoutState,
            `indexed, but ${store.episodeDir(entry.episode_id)} is missing`,
            where,
          ),
        );
      }
      continue;
    }
    const differing = (['sequence', 'allocation_key', 'created_at', 'allocated_by'] as const).filter(
      (f) => !isDeepStrictEqual(entry[f], state[f]),
    );
    if (differing.length > 0) {
      problems.push(
        problem(ProblemCode.IndexStateMismatch, `index and state differ in ${differing.join(', ')}`, where),
      );
    }
    if (entry.allocation_key !== null) problems.push(...(await checkKeyIndex(store, entry)));
  }
  for (const [id, { file }] of states) {
    if (!indexedIds.has(id)) {
      problems.push(
        problem(ProblemCode.DirectoryNotIndexed, `not listed in ${store.weekIndexPath(parseEpisodeId(id).weekId)}`, {
          episode_id: id,
          file,
        }),
      );
    }
  }
  return problems;
}

/** Allocation finds a key's episodes in other weeks through its key file: a committed episode missing there is lost. */
async function checkKeyIndex(store: FileEpisodeStore, entry: IndexedEpisode): Promise<Problem[]> {
  const key = entry.allocation_key ?? '';
  const file = store.keyIndexPath(key);
  const where = { episode_id: entry.episode_id, file };
  const bytes = await readBytesIfExists(file);
  if (!bytes) return [problem(ProblemCode.KeyIndexMissing, `no key file for ${JSON.stringify(key)}`, where)];
  const parsed = parseBytes(file, bytes, keyIndexSchema);
  if (!parsed.ok) return [problem(ProblemCode.IndexSchema, parsed.message, where)];
  const listed =
    parsed.value.allocation_key === key &&
    parsed.value.episodes.some((e) => e.episode_id === entry.episode_id && e.week_id === entry.week_id);
  return listed ? [] : [problem(ProblemCode.KeyIndexMissing, `key file does not list ${entry.episode_id}`, where)];
}

/** Week-v1 data still in place: what `episodes migrate-legacy` would refuse, and one line per thing it would still do. */
async function legacyProblems(store: FileEpisodeStore): Promise<Problem[]> {
  const outcome = await planMigration(store, () => new Date(0));
  if (outcome.kind === 'nothing-to-migrate') return [];
  const problems = [...outcome.problems];
  for (const week of outcome.plan.weeks) {
    const steps = Object.entries(week.pending)
      .filter(([, todo]) => todo)
      .map(([step]) => step);
    if (steps.length === 0) continue;
    problems.push(
      problem(
        ProblemCode.LegacyUnmigrated,
        `legacy episode not migrated to ${week.episodeId} (to do: ${steps.join(', ')}); run episodes migrate-legacy`,
        {
          episode_id: week.fromId,
          file: week.pending.move ? week.legacyDir : week.targetDir,
        },
      ),
    );
  }
  if (outcome.plan.legacyHistoryPresent) {
    problems.push(
      problem(ProblemCode.LegacyUnmigrated, 'legacy history.json still in place; run episodes migrate-legacy', {
        file: outcome.plan.layout.legacyHistory,
      }),
    );
  }
  return problems;
}
