/**
 * A migrated episode must still match the legacy evidence it was migrated from: the evidence copies hash to what the
 * migration recorded, and mapping them again yields exactly the stored state and history entry.
 */
import { isDeepStrictEqual } from 'node:util';
import type { EpisodeState, HistoryEntry } from '../domain/episode-state';
import { parseWeekId } from '../domain/week-id';
import { evidenceFiles } from '../legacy-migration/journal';
import { isJsonObject, legacyHistoryEntrySchema, legacyStateSchema } from '../legacy-migration/legacy-format';
import { mapLegacyEpisode } from '../legacy-migration/legacy-mapping';
import { resolveInside, sha256Hex } from './media';
import { ProblemCode, problem, type Problem } from './problem';
import { readBytesIfExists } from './read-only-fs';
import type { Located } from './source';

export async function checkAgainstEvidence(
  episode: Located<EpisodeState>,
  history: Located<HistoryEntry> | undefined,
  evidenceBase: string,
): Promise<Problem[]> {
  const { value: state, file } = episode;
  const m = state.migration;
  if (!m) return [];
  const where = (f: string) => ({ episode_id: state.episode_id, file: f });
  const root = resolveInside(evidenceBase, m.evidence_dir);
  let fromId: string;
  try {
    fromId = parseWeekId(m.from_id);
  } catch {
    return [
      problem(
        ProblemCode.EvidenceMismatch,
        `migration.from_id ${JSON.stringify(m.from_id)} is not a week`,
        where(file),
      ),
    ];
  }
  if (root === undefined) {
    return [
      problem(
        ProblemCode.EvidenceMissing,
        `evidence_dir ${JSON.stringify(m.evidence_dir)} is outside the data dir`,
        where(file),
      ),
    ];
  }
  const files = evidenceFiles(root, fromId);
  const stateBytes = await readBytesIfExists(files.state);
  const historyBytes = await readBytesIfExists(files.history);
  const problems: Problem[] = [];
  if (!stateBytes)
    problems.push(problem(ProblemCode.EvidenceMissing, 'legacy state.json evidence is missing', where(files.state)));
  else if (sha256Hex(stateBytes) !== m.source_state_sha256) {
    problems.push(
      problem(ProblemCode.EvidenceMismatch, 'sha256 differs from migration.source_state_sha256', where(files.state)),
    );
  }
  if (!historyBytes)
    problems.push(
      problem(ProblemCode.EvidenceMissing, 'legacy history.json evidence is missing', where(files.history)),
    );
  else if (sha256Hex(historyBytes) !== m.source_history_sha256) {
    problems.push(
      problem(
        ProblemCode.EvidenceMismatch,
        'sha256 differs from migration.source_history_sha256',
        where(files.history),
      ),
    );
  }
  if (problems.length > 0 || !stateBytes || !historyBytes) return problems;

  const raw = parseJson(stateBytes);
  const legacy = legacyStateSchema.safeParse(raw);
  const historyJson = parseJson(historyBytes);
  const historyRaw = isJsonObject(historyJson) ? historyJson[fromId] : undefined;
  const legacyHistory = legacyHistoryEntrySchema.safeParse(historyRaw);
  if (!isJsonObject(raw) || !legacy.success || !isJsonObject(historyRaw) || !legacyHistory.success) {
    return [problem(ProblemCode.EvidenceMismatch, 'the evidence no longer parses as week-v1', where(files.state))];
  }
  let expected;
  try {
    expected = mapLegacyEpisode({
      raw,
      legacy: legacy.data,
      historyRaw,
      history: legacyHistory.data,
      sourceStateSha256: m.source_state_sha256,
      sourceHistorySha256: m.source_history_sha256 ?? '',
      migratedAt: m.migrated_at,
    });
  } catch (e) {
    return [
      problem(ProblemCode.EvidenceMismatch, `the evidence no longer maps: ${(e as Error).message}`, where(files.state)),
    ];
  }
  const stateDiff = differingFields(expected.state, state);
  if (stateDiff.length > 0) {
    problems.push(
      problem(ProblemCode.EvidenceMismatch, `differs from its legacy evidence in ${stateDiff.join(', ')}`, where(file)),
    );
  }
  const historyDiff = history ? differingFields(expected.history, history.value) : [];
  if (history && historyDiff.length > 0) {
    problems.push(
      problem(
        ProblemCode.EvidenceMismatch,
        `differs from its legacy evidence in ${historyDiff.join(', ')}`,
        where(history.file),
      ),
    );
  }
  return problems;
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
