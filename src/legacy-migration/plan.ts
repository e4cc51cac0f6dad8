/**
 * Plan and pre-flight of the week-v1 migration, strictly read-only: which legacy episodes exist, where each one is in
 * the migration (a re-run after a crash resumes from what is on disk), what it becomes, and every problem that must
 * stop the migration before anything is written. `episodes verify` runs the same planner on a store that still holds
 * legacy data.
 */
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { formatEpisodeId, type EpisodeId } from '../domain/episode-id';
import { episodeStateSchema, historyEntrySchema } from '../domain/episode-state';
import { parseWeekId, type WeekId } from '../domain/week-id';
import { unexpectedContent } from '../domain/zod-issue';
import { weekIndexSchema, type FileEpisodeStore, type WeekIndex } from '../store/file-store';
import { checkMediaFile, resolveInside, sha256Hex } from '../files/media';
import { ProblemCode, problem, type Problem } from '../domain/problem';
import { isDirectory, listNames, parseBytes, readBytesIfExists, requireDataDir } from '../files/read-only-fs';
import { MigrationLayout, migrationJournalSchema, type MigrationJournal } from './journal';
import {
  LEGACY_FORMAT,
  LEGACY_WEEK_KEY,
  isJsonObject,
  legacyHistoryEntrySchema,
  legacyStateSchema,
  type JsonObject,
  type LegacyHistoryEntry,
  type LegacyState,
} from './legacy-format';
import { LEGACY_SEQUENCE, legacyRepresentationProblems, mapLegacyEpisode, type MappedEpisode } from './legacy-mapping';

/** The steps of one week, in the order they are applied; `true` = still to do. */
export interface WeekSteps {
  evidence: boolean;
  move: boolean;
  state: boolean;
  history: boolean;
  index: boolean;
}

export interface WeekPlan {
  fromId: WeekId;
  episodeId: EpisodeId;
  legacyDir: string;
  targetDir: string;
  /** The original state.json bytes (from the legacy directory, or from the evidence copy once moved). */
  sourceBytes: Buffer;
  legacy: LegacyState;
  mapped: MappedEpisode;
  pending: WeekSteps;
}

export interface MigrationPlan {
  layout: MigrationLayout;
  /** The journal on disk, or the one a fresh migration will write first. */
  journal: MigrationJournal;
  journalPending: boolean;
  /** history.json at the data dir root: removed as the very last step. */
  legacyHistoryPresent: boolean;
  historyBytes: Buffer;
  historyEvidencePending: boolean;
  weeks: WeekPlan[];
}

export type PlanOutcome =
  { kind: 'nothing-to-migrate'; problems: [] } | { kind: 'planned'; plan: MigrationPlan; problems: Problem[] };

export async function planMigration(store: FileEpisodeStore, now: () => Date): Promise<PlanOutcome> {
  const layout = new MigrationLayout(store.dataDir);
  await requireDataDir(layout.dataDir);
  const problems: Problem[] = [];
  const legacyDirs = await findLegacyDirs(layout, problems);
  const historyBytes = await readBytesIfExists(layout.legacyHistory);
  if (historyBytes === undefined) {
    // history.json is removed last: without it and without legacy directories the migration is complete (or never
    // had anything to do).
    if (legacyDirs.length === 0 && problems.length === 0) return { kind: 'nothing-to-migrate', problems: [] };
    problems.push(
      problem(ProblemCode.LegacyHistoryInvalid, 'legacy episodes exist but history.json is missing', {
        file: layout.legacyHistory,
      }),
    );
  }
  const history = parseLegacyHistory(layout.legacyHistory, historyBytes ?? Buffer.from('{}'), problems);
  const sourceHistorySha256 = sha256Hex(historyBytes ?? '');
  const journal = await readJournal(layout, problems);
  if (journal && journal.source_history_sha256 !== sourceHistorySha256) {
    problems.push(
      problem(ProblemCode.MigrationJournalMismatch, 'history.json changed since the interrupted migration started', {
        file: layout.legacyHistory,
      }),
    );
  }
  const evidenceHistory = await readBytesIfExists(layout.evidenceHistory);
  if (evidenceHistory && historyBytes && !evidenceHistory.equals(historyBytes)) {
    problems.push(
      problem(ProblemCode.MigrationTargetTaken, 'an evidence copy of another history.json is already kept here', {
        file: layout.evidenceHistory,
      }),
    );
  }

  const weekIds = new Set<WeekId>([...legacyDirs, ...history.keys()]);
  for (const w of journal?.weeks ?? []) weekIds.add(w.from_id);
  const migratedAt = journal?.migrated_at ?? now().toISOString();
  const weeks: WeekPlan[] = [];
  for (const fromId of [...weekIds].sort()) {
    const week = await planWeek(store, layout, {
      fromId,
      journal,
      history: history.get(fromId),
      sourceHistorySha256,
      migratedAt,
      problems,
    });
    if (week) weeks.push(week);
  }

  return {
    kind: 'planned',
    problems,
    plan: {
      layout,
      journal: journal ?? {
        schema: 'migration-journal/v1',
        from_format: LEGACY_FORMAT,
        migrated_at: migratedAt,
        source_history_sha256: sourceHistorySha256,
        weeks: weeks.map((w) => ({
          from_id: w.fromId,
          episode_id: w.episodeId,
          source_state_sha256: sha256Hex(w.sourceBytes),
        })),
      },
      journalPending: journal === undefined,
      legacyHistoryPresent: historyBytes !== undefined,
      historyBytes: historyBytes ?? Buffer.alloc(0),
      historyEvidencePending: evidenceHistory === undefined,
      weeks,
    },
  };
}

/** `episodes/<week_id>/` directories: the legacy layout (current episode directories are `<week_id>-<n>`). */
async function findLegacyDirs(layout: MigrationLayout, problems: Problem[]): Promise<WeekId[]> {
  const weeks: WeekId[] = [];
  for (const name of await listNames(layout.episodesDir)) {
    if (!LEGACY_WEEK_KEY.test(name)) continue;
    const dir = path.join(layout.episodesDir, name);
    try {
      const weekId = parseWeekId(name);
      if (await isDirectory(dir)) weeks.push(weekId);
      else problems.push(problem(ProblemCode.LegacyStateInvalid, 'not a directory', { episode_id: name, file: dir }));
    } catch {
      problems.push(problem(ProblemCode.LegacyStateInvalid, `${name} is not an ISO week`, { file: dir }));
    }
  }
  return weeks;
}

interface LegacyHistoryWeek {
  raw: JsonObject;
  entry: LegacyHistoryEntry;
}

function parseLegacyHistory(file: string, bytes: Buffer, problems: Problem[]): Map<WeekId, LegacyHistoryWeek | null> {
  const weeks = new Map<WeekId, LegacyHistoryWeek | null>();
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    problems.push(problem(ProblemCode.LegacyHistoryInvalid, `not valid JSON (${(e as Error).message})`, { file }));
    return weeks;
  }
  if (!isJsonObject(json)) {
    problems.push(problem(ProblemCode.LegacyHistoryInvalid, 'not a JSON object keyed by week', { file }));
    return weeks;
  }
  for (const [key, value] of Object.entries(json)) {
    if (!LEGACY_WEEK_KEY.test(key)) continue;
    let weekId: WeekId;
    try {
      weekId = parseWeekId(key);
    } catch {
      problems.push(problem(ProblemCode.LegacyHistoryInvalid, `key ${key} is not an ISO week`, { file }));
      continue;
    }
    const parsed = legacyHistoryEntrySchema.safeParse(value);
    if (!parsed.success || !isJsonObject(value)) {
      problems.push(
        problem(ProblemCode.LegacyHistoryInvalid, `entry ${key}: ${unexpectedContent(parsed.error, 'not an object')}`, {
          episode_id: weekId,
          file,
        }),
      );
      weeks.set(weekId, null);
      continue;
    }
    weeks.set(weekId, { raw: value, entry: parsed.data });
  }
  return weeks;
}

async function readJournal(layout: MigrationLayout, problems: Problem[]): Promise<MigrationJournal | undefined> {
  const bytes = await readBytesIfExists(layout.journal);
  if (bytes === undefined) return undefined;
  const parsed = parseBytes(layout.journal, bytes, migrationJournalSchema);
  if (parsed.ok) return parsed.value;
  problems.push(problem(ProblemCode.MigrationJournalMismatch, parsed.message, { file: layout.journal }));
  return undefined;
}

interface WeekContext {
  fromId: WeekId;
  journal: MigrationJournal | undefined;
  /** undefined: history.json has no entry for the week; null: it has one that does not parse (already reported). */
  history: LegacyHistoryWeek | null | undefined;
  sourceHistorySha256: string;
  migratedAt: string;
  problems: Problem[];
}

type Report = (code: ProblemCode, message: string, file: string) => void;

/** One week being planned: what every step of its planning reads, and where it reports a problem. */
interface WeekPlanning extends WeekContext {
  store: FileEpisodeStore;
  layout: MigrationLayout;
  episodeId: EpisodeId;
  journalWeek: MigrationJournal['weeks'][number] | undefined;
  report: Report;
}

/** Where a week's original state.json is now (beside its media until the move, then the evidence copy). */
interface WeekSource {
  legacyDir: string;
  targetDir: string;
  inLegacyDir: boolean;
  inTargetDir: boolean;
  evidenceBytes: Buffer | undefined;
  sourceFile: string;
  sourceBytes: Buffer;
  sourceStateSha256: string;
}

/** One legacy week: where it stands, whether it is sound, what it becomes, and which steps are still to do. */
async function planWeek(store: FileEpisodeStore, layout: MigrationLayout, ctx: WeekContext): Promise<WeekPlan | null> {
  const { fromId, problems } = ctx;
  const episodeId = formatEpisodeId(fromId, LEGACY_SEQUENCE);
  const journalWeek = ctx.journal?.weeks.find((w) => w.from_id === fromId);
  const before = problems.length;
  const report: Report = (code, message, file) => problems.push(problem(code, message, { episode_id: fromId, file }));
  const week: WeekPlanning = { ...ctx, store, layout, episodeId, journalWeek, report };

  if (ctx.journal && !journalWeek) {
    report(
      ProblemCode.MigrationJournalMismatch,
      'legacy episode appeared after the migration started',
      layout.legacyDir(fromId),
    );
    return null;
  }
  const source = await locateSource(week);
  if (!source) return null;
  const parsed = await checkLegacyWeek(week, source);
  if (!parsed || problems.length > before || !ctx.history) return null;
  const mapped = mapWeek(week, ctx.history, source, parsed);
  if (!mapped) return null;
  const pending = await pendingSteps(week, source, mapped);
  if (problems.length > before) return null;
  const { legacyDir, targetDir, sourceBytes } = source;
  return { fromId, episodeId, legacyDir, targetDir, sourceBytes, legacy: parsed.legacy, mapped, pending };
}

async function locateSource(week: WeekPlanning): Promise<WeekSource | null> {
  const { fromId, layout, episodeId, journalWeek, report } = week;
  const legacyDir = layout.legacyDir(fromId);
  const targetDir = layout.targetDir(episodeId);
  const inLegacyDir = await isDirectory(legacyDir);
  const inTargetDir = await isDirectory(targetDir);
  const evidenceFile = layout.evidenceState(fromId);
  const evidenceBytes = await readBytesIfExists(evidenceFile);

  let sourceFile: string;
  let sourceBytes: Buffer | undefined;
  if (inLegacyDir && inTargetDir) {
    report(ProblemCode.MigrationTargetTaken, `both ${legacyDir} and ${targetDir} exist`, targetDir);
    return null;
  } else if (inLegacyDir) {
    sourceFile = path.join(legacyDir, 'state.json');
    sourceBytes = await readBytesIfExists(sourceFile);
  } else if (inTargetDir && journalWeek) {
    sourceFile = evidenceFile;
    sourceBytes = evidenceBytes;
    if (!sourceBytes) {
      report(ProblemCode.EvidenceMissing, 'moved episode without its evidence copy', evidenceFile);
      return null;
    }
  } else {
    const [file, source] =
      week.history === undefined ? [layout.journal, 'the migration journal'] : [layout.legacyHistory, 'history.json'];
    report(ProblemCode.LegacyHistoryMismatch, `${source} lists ${fromId} but ${legacyDir} is missing`, file);
    return null;
  }
  if (!sourceBytes) {
    report(ProblemCode.LegacyStateInvalid, 'state.json is missing', sourceFile);
    return null;
  }
  const sourceStateSha256 = sha256Hex(sourceBytes);
  if (journalWeek && journalWeek.source_state_sha256 !== sourceStateSha256) {
    report(ProblemCode.MigrationJournalMismatch, 'state.json changed since the migration started', sourceFile);
  }
  if (evidenceBytes && !evidenceBytes.equals(sourceBytes)) {
    report(
      ProblemCode.MigrationTargetTaken,
      'an evidence copy of another state.json is already kept here',
      evidenceFile,
    );
  }
  return { legacyDir, targetDir, inLegacyDir, inTargetDir, evidenceBytes, sourceFile, sourceBytes, sourceStateSha256 };
}

/** The legacy state parses, agrees with history.json, and every media file it records is there and intact. */
async function checkLegacyWeek(
  week: WeekPlanning,
  source: WeekSource,
): Promise<{ raw: JsonObject; legacy: LegacyState } | null> {
  const { fromId, problems, layout, report } = week;
  const parsed = parseLegacyState(source.sourceFile, source.sourceBytes, fromId, problems);
  if (!parsed) return null;
  problems.push(...legacyRepresentationProblems(parsed.legacy, source.sourceFile, fromId));
  if (week.history === undefined) {
    report(ProblemCode.LegacyHistoryMismatch, `history.json has no entry for ${fromId}`, layout.legacyHistory);
  } else if (week.history !== null) {
    problems.push(...historyDisagreements(layout.legacyHistory, fromId, parsed.legacy, week.history));
  }
  const mediaDir = source.inLegacyDir ? source.legacyDir : source.targetDir;
  for (const [name, media] of Object.entries(parsed.legacy.media)) {
    if (resolveInside(mediaDir, media.path) === path.join(mediaDir, 'state.json')) {
      report(ProblemCode.MediaPathInvalid, `media ${name} is recorded as state.json`, mediaDir);
      continue;
    }
    problems.push(...(await checkMediaFile(mediaDir, name, media, fromId)));
  }
  return parsed;
}

function mapWeek(
  week: WeekPlanning,
  history: LegacyHistoryWeek,
  source: WeekSource,
  parsed: { raw: JsonObject; legacy: LegacyState },
): MappedEpisode | null {
  try {
    return mapLegacyEpisode({
      raw: parsed.raw,
      legacy: parsed.legacy,
      historyRaw: history.raw,
      history: history.entry,
      sourceStateSha256: source.sourceStateSha256,
      sourceHistorySha256: week.sourceHistorySha256,
      migratedAt: week.migratedAt,
    });
  } catch (e) {
    const message = `does not fit the current schema: ${(e as Error).message}`;
    week.report(ProblemCode.LegacyUnrepresentable, message, source.sourceFile);
    return null;
  }
}

/** Which steps of the week are still to do; a target that holds something else than the migration's is reported. */
async function pendingSteps(week: WeekPlanning, source: WeekSource, mapped: MappedEpisode): Promise<WeekSteps> {
  const { store, fromId, episodeId, report, problems } = week;
  const { targetDir, inTargetDir } = source;
  const pending: WeekSteps = {
    evidence: source.evidenceBytes === undefined,
    move: source.inLegacyDir,
    state: true,
    history: true,
    index: true,
  };
  if (inTargetDir) pending.state = !(await holdsJson(path.join(targetDir, 'state.json'), mapped.state, 'state'));
  if (inTargetDir && pending.state) {
    const stateFile = path.join(targetDir, 'state.json');
    const current = await readBytesIfExists(stateFile);
    if (current && sha256Hex(current) !== source.sourceStateSha256) {
      report(ProblemCode.MigrationTargetTaken, 'neither the legacy state nor its migrated form', stateFile);
    }
  }
  const historyFile = store.historyPath(episodeId);
  const historyBytes = await readBytesIfExists(historyFile);
  if (historyBytes) {
    pending.history = false;
    if (!(await holdsJson(historyFile, mapped.history, 'history'))) {
      report(ProblemCode.MigrationTargetTaken, `history of ${episodeId} already exists and differs`, historyFile);
    }
  }
  const index = await readWeekIndex(store, fromId, problems);
  const taken = index?.episodes.find((e) => e.sequence === LEGACY_SEQUENCE || e.episode_id === episodeId);
  if (taken) {
    pending.index = false;
    if (!isDeepStrictEqual(taken, mapped.indexEntry)) {
      report(
        ProblemCode.MigrationTargetTaken,
        `${episodeId} is already allocated (key ${JSON.stringify(taken.allocation_key)})`,
        store.weekIndexPath(fromId),
      );
    }
  }
  return pending;
}

function parseLegacyState(
  file: string,
  bytes: Buffer,
  fromId: WeekId,
  problems: Problem[],
): { raw: JsonObject; legacy: LegacyState } | null {
  const where = { episode_id: fromId, file };
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    problems.push(problem(ProblemCode.LegacyStateInvalid, `not valid JSON (${(e as Error).message})`, where));
    return null;
  }
  const parsed = legacyStateSchema.safeParse(raw);
  if (!parsed.success || !isJsonObject(raw)) {
    problems.push(problem(ProblemCode.LegacyStateInvalid, unexpectedContent(parsed.error, 'not an object'), where));
    return null;
  }
  if (parsed.data.week !== fromId) {
    problems.push(problem(ProblemCode.LegacyStateInvalid, `holds week ${parsed.data.week}, not ${fromId}`, where));
    return null;
  }
  return { raw, legacy: parsed.data };
}

/** history.json and the week's state.json must tell the same story before either becomes the current format. */
function historyDisagreements(file: string, fromId: WeekId, legacy: LegacyState, h: LegacyHistoryWeek): Problem[] {
  const problems: Problem[] = [];
  const disagree = (message: string) =>
    problems.push(problem(ProblemCode.LegacyHistoryMismatch, `${fromId}: ${message}`, { episode_id: fromId, file }));
  if (legacy.completed_at != null && Date.parse(legacy.completed_at) !== Date.parse(h.entry.completed_at)) {
    disagree(`completed_at ${h.entry.completed_at}, state.json says ${legacy.completed_at}`);
  }
  const total = legacy.costs.reduce((sum, c) => sum + c.amount_cents, 0);
  if (total !== h.entry.total_cost_cents) {
    disagree(`total_cost_cents ${h.entry.total_cost_cents}, the state's costs sum to ${total}`);
  }
  for (const c of legacy.costs) {
    if (c.currency !== h.entry.currency) {
      disagree(`currency ${h.entry.currency}, cost of ${c.remote_job_id} is in ${c.currency}`);
    }
  }
  for (const [key, value] of Object.entries(h.raw)) {
    if (!key.endsWith('_sha256')) continue;
    const name = key.slice(0, -'_sha256'.length);
    const media = legacy.media[name];
    if (!media) disagree(`${key} is recorded but the state has no media ${name}`);
    else if (media.sha256 !== value) disagree(`${key} ${String(value)}, the state records ${media.sha256}`);
  }
  return problems;
}

async function holdsJson(file: string, expected: unknown, kind: 'state' | 'history'): Promise<boolean> {
  const bytes = await readBytesIfExists(file);
  if (!bytes) return false;
  const parsed = parseBytes(file, bytes, kind === 'state' ? episodeStateSchema : historyEntrySchema);
  return parsed.ok && isDeepStrictEqual(parsed.value, expected);
}

async function readWeekIndex(
  store: FileEpisodeStore,
  weekId: WeekId,
  problems: Problem[],
): Promise<WeekIndex | undefined> {
  const file = store.weekIndexPath(weekId);
  const bytes = await readBytesIfExists(file);
  if (!bytes) return undefined;
  const parsed = parseBytes(file, bytes, weekIndexSchema);
  if (parsed.ok) return parsed.value;
  problems.push(problem(ProblemCode.IndexSchema, parsed.message, { file }));
  return undefined;
}
