/**
 * A migrated episode must still match the legacy evidence it was migrated from: the evidence copies hash to what the
 * migration recorded, and mapping them again yields exactly the stored state and history entry.
 */
import { isDeepStrictEqual } from 'node:util';
import type { EpisodeState, HistoryEntry } from '../domain/episode-state';
import { parseWeekId } from '../domain/week-id';
import { evidenceFiles } from '../legacy-migration/journal';
import { isJsonObject, legacyHistoryEntrySchema, legacyStateSchema } from '../legacy-migration/legacy-format';
import { mapLegacyEpisode, type MappedEpisode } from '../legacy-migration/legacy-mapping';
import { resolveInside, sha256Hex } from '../files/media';
import { ProblemCode, problem, type Problem } from '../domain/problem';
import { readBytesIfExists } from '../files/read-only-fs';
import type { Located } from './source';

type Migration = NonNullable<EpisodeState['migration']>;
type Where = (file: string) => { episode_id: string; file: string };

export async function checkAgainstEvidence(
  episode: Located<EpisodeState>,
  history: Located<HistoryEntry> | undefined,
  evidenceBase: string,
): Promise<Problem[]> {
  const { value: state, file } = episode;
  const m = state.migration;
  if (!m) return [];
  const where: Where = (f) => ({ episode_id: state.episode_id, file: f });
  const located = locateEvidence(m, evidenceBase, where(file));
  if ('problem' in located) return [located.problem];
  const { files, fromId } = located;
  const stateBytes = await readBytesIfExists(files.state);
  const historyBytes = await readBytesIfExists(files.history);
  const problems = [
    ...hashProblems(stateBytes, m.source_state_sha256, 'state', where(files.state)),
    ...hashProblems(historyBytes, m.source_history_sha256, 'history', where(files.history)),
  ];
  if (problems.length > 0 || !stateBytes || !historyBytes) return problems;

  const expected = remap(stateBytes, historyBytes, fromId, m);
  if (typeof expected === 'string') return [problem(ProblemCode.EvidenceMismatch, expected, where(files.state))];
  const stateDiff = differingFields(expected.state, state);
  if (stateDiff.length > 0) problems.push(differsProblem(stateDiff, where(file)));
  const historyDiff = history ? differingFields(expected.history, history.value) : [];
  if (history && historyDiff.length > 0) problems.push(differsProblem(historyDiff, where(history.file)));
  return problems;
}

/** The evidence copies of a migrated episode, or why they cannot even be looked for. */
function locateEvidence(
  m: Migration,
  evidenceBase: string,
  where: { episode_id: string; file: string },
): { files: ReturnType<typeof evidenceFiles>; fromId: string } | { problem: Problem } {
  let fromId: string;
  try {
    fromId = parseWeekId(m.from_id);
  } catch {
    const message = `migration.from_id ${JSON.stringify(m.from_id)} is not a week`;
    return { problem: problem(ProblemCode.EvidenceMismatch, message, where) };
  }
  const root = resolveInside(evidenceBase, m.evidence_dir);
  if (root === undefined) {
    const message = `evidence_dir ${JSON.stringify(m.evidence_dir)} is outside the data dir`;
    return { problem: problem(ProblemCode.EvidenceMissing, message, where) };
  }
  return { files: evidenceFiles(root, fromId), fromId };
}

/** An evidence copy is there and hashes to what the migration recorded. */
function hashProblems(
  bytes: Buffer | undefined,
  recorded: string | null | undefined,
  kind: 'state' | 'history',
  where: { episode_id: string; file: string },
): Problem[] {
  if (!bytes) return [problem(ProblemCode.EvidenceMissing, `legacy ${kind}.json evidence is missing`, where)];
  if (sha256Hex(bytes) !== recorded) {
    return [problem(ProblemCode.EvidenceMismatch, `sha256 differs from migration.source_${kind}_sha256`, where)];
  }
  return [];
}

/** Maps the evidence again, as the migration did; a string says why it no longer can. */
function remap(stateBytes: Buffer, historyBytes: Buffer, fromId: string, m: Migration): MappedEpisode | string {
  const raw = parseJson(stateBytes);
  const legacy = legacyStateSchema.safeParse(raw);
  const historyJson = parseJson(historyBytes);
  const historyRaw = isJsonObject(historyJson) ? historyJson[fromId] : undefined;
  const legacyHistory = legacyHistoryEntrySchema.safeParse(historyRaw);
  if (!isJsonObject(raw) || !legacy.success || !isJsonObject(historyRaw) || !legacyHistory.success) {
    return 'the evidence no longer parses as week-v1';
  }
  try {
    return mapLegacyEpisode({
      raw,
      legacy: legacy.data,
      historyRaw,
      history: legacyHistory.data,
      sourceStateSha256: m.source_state_sha256,
      sourceHistorySha256: m.source_history_sha256 ?? '',
      migratedAt: m.migrated_at,
    });
  } catch (e) {
    return `the evidence no longer maps: ${(e as Error).message}`;
  }
}

function differsProblem(fields: string[], where: { episode_id: string; file: string }): Problem {
  return problem(ProblemCode.EvidenceMismatch, `differs from its legacy evidence in ${fields.join(', ')}`, where);
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}

function differingFields(expected: object, actual: object): string[] {
  const keys = new Set([...Object.keys(expected), ...Object.keys(actual)]);
  const e = expected as Record<string, unknown>;
  const a = actual as Record<string, unknown>;
  return [...keys].filter((k) => !isDeepStrictEqual(e[k], a[k])).sort();
}
