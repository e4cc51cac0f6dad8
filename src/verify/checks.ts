/**
 * The generic checks of `episodes verify`: pure functions over parsed episode states and history entries, valid for
 * any store. Storage-specific structure (the file store's index against its directories) is checked elsewhere.
 */
import { isDeepStrictEqual } from 'node:util';
import type { EpisodeState, HistoryEntry } from '../domain/episode-state';
import type { PaidStep } from '../domain/paid-step';
import { stepKey } from '../domain/names';
import { ProblemCode, problem, type Problem } from '../domain/problem';
import type { Located } from './source';

export function checkRecords(
  episodes: readonly Located<EpisodeState>[],
  history: readonly Located<HistoryEntry>[],
): Problem[] {
  const problems: Problem[] = [];
  for (const e of episodes) problems.push(...checkIdentity(e), ...checkStepsAndLedger(e));
  problems.push(...checkUniqueness(episodes));
  for (const h of history) problems.push(...checkIdentity(h), ...checkHistoryLedger(h));
  problems.push(...checkHistoryAgainstStates(episodes, history));
  return problems;
}

function checkIdentity({ value, file }: Located<EpisodeState | HistoryEntry>): Problem[] {
  const expected = `${value.week_id}-${value.sequence}`;
  if (value.episode_id === expected) return [];
  return [
    problem(
      ProblemCode.IdMismatch,
      `episode_id ${value.episode_id} but week ${value.week_id} + sequence ${value.sequence}`,
      {
        episode_id: value.episode_id,
        file,
      },
    ),
  ];
}

/** Every charge names a remote job of the same step and round; a charged step has a remote job reference. */
function checkStepsAndLedger({ value: s, file }: Located<EpisodeState>): Problem[] {
  const where = { episode_id: s.episode_id, file };
  const problems: Problem[] = [];
  for (const [key, record] of Object.entries(s.steps)) {
    if (key !== stepKey(record.step, record.round)) {
      problems.push(
        problem(ProblemCode.StepKeyMismatch, `step record ${key} is for ${record.step} round ${record.round}`, where),
      );
    }
    if (record.charged && record.remote_job_id === null) {
      problems.push(problem(ProblemCode.ChargeWithoutRemoteJob, `step ${key} is charged but has no remote job`, where));
    }
  }
  for (const entry of s.ledger) {
    const key = stepKey(entry.step, entry.round);
    const record = s.steps[key];
    if (record && record.remote_job_id === null) {
      problems.push(
        problem(ProblemCode.ChargeWithoutRemoteJob, `charge for ${key} but the step has no remote job`, where),
      );
    } else if (record?.remote_job_id !== entry.remote_job_id) {
      problems.push(
        problem(
          ProblemCode.LedgerUnknownJob,
          `charge for ${key} names remote job ${entry.remote_job_id}, which step ${key} does not record`,
          where,
        ),
      );
    }
  }
  return problems;
}

function checkUniqueness(episodes: readonly Located<EpisodeState>[]): Problem[] {
  const problems: Problem[] = [];
  const claims = (code: ProblemCode, groups: Map<string, Located<EpisodeState>[]>) => {
    for (const [what, group] of groups) {
      if (group.length < 2) continue;
      for (const e of group) {
        const others = group.filter((o) => o !== e).map((o) => o.file);
        const where = { episode_id: e.value.episode_id, file: e.file };
        problems.push(problem(code, `${what} is also claimed by ${others.join(', ')}`, where));
      }
    }
  };
  claims(
    ProblemCode.DuplicateSequence,
    groupBy(episodes, (e) => `week ${e.value.week_id} sequence ${e.value.sequence}`),
  );
  claims(
    ProblemCode.DuplicateAllocationKey,
    groupBy(
      episodes.filter((e) => e.value.allocation_key !== null),
      (e) => `allocation key ${JSON.stringify(e.value.allocation_key)}`,
    ),
  );
  return problems;
}

function checkHistoryLedger({ value: h, file }: Located<HistoryEntry>): Problem[] {
  const where = { episode_id: h.episode_id, file };
  const problems: Problem[] = [];
  for (const entry of h.ledger) {
    const known = h.remote_jobs.some(
      (j) => j.remote_job_id === entry.remote_job_id && j.step === entry.step && j.round === entry.round,
    );
    if (!known) {
      problems.push(
        problem(
          ProblemCode.LedgerUnknownJob,
          `charge names remote job ${entry.remote_job_id}, not in remote_jobs`,
          where,
        ),
      );
    }
    if (entry.currency !== h.currency) {
      problems.push(
        problem(
          ProblemCode.LedgerCurrencyMismatch,
          `charge of ${entry.remote_job_id} in ${entry.currency}, total in ${h.currency}`,
          where,
        ),
      );
    }
  }
  const sum = h.ledger.reduce((total, entry) => total + entry.amount_cents, 0);
  if (sum !== h.total_cost_cents) {
    problems.push(
      problem(
        ProblemCode.LedgerTotalMismatch,
        `charges sum to ${sum}, total_cost_cents is ${h.total_cost_cents}`,
        where,
      ),
    );
  }
  return problems;
}

/** The fields a history entry repeats from its episode's completed state must still be equal. */
const MIRRORED_FIELDS = ['week_id', 'sequence', 'allocation_key', 'completed_at', 'approval', 'migration'] as const;

/**
 * Reassemblies: assembly rounds started after the episode completed (`episodes reassemble`). History stays as written
 * at completion, so their jobs and charges are the state's alone, and the state's final video may be theirs. A job
 * the history names is the completion's own, whatever the dates say: completed_at is workflow time, which can lag
 * the clock that dated the intent.
 */
function reassemblies(state: EpisodeState, h: HistoryEntry): Set<string> {
  const completed = Date.parse(h.completed_at);
  const named = new Set(h.remote_jobs.map((j) => j.remote_job_id));
  const later = Object.values(state.steps).filter(
    (r) =>
      r.step === 'assembly' &&
      Date.parse(r.intent_at) > completed &&
      (r.remote_job_id === null || !named.has(r.remote_job_id)),
  );
  return new Set(later.map((r) => stepKey(r.step, r.round)));
}

function checkHistoryAgainstStates(
  episodes: readonly Located<EpisodeState>[],
  history: readonly Located<HistoryEntry>[],
): Problem[] {
  const problems: Problem[] = [];
  const byId = new Map(episodes.map((e) => [e.value.episode_id as string, e]));
  const withHistory = new Set<string>();
  for (const { value: h, file } of history) {
    withHistory.add(h.episode_id);
    const where = { episode_id: h.episode_id, file };
    const state = byId.get(h.episode_id)?.value;
    if (!state) {
      problems.push(
        problem(ProblemCode.HistoryWithoutEpisode, `history of ${h.episode_id}, which has no state`, where),
      );
      continue;
    }
    // A history entry may precede its state's completion (completion in progress): compared once completed.
    if (state.status !== 'completed') continue;
    const differing: string[] = MIRRORED_FIELDS.filter((f) => !isDeepStrictEqual(h[f], state[f]));
    const later = reassemblies(state, h);
    const isLater = (r: { step: PaidStep; round: number }) => later.has(stepKey(r.step, r.round));
    const ledgerAtCompletion = state.ledger.filter((c) => !isLater(c));
    if (!isDeepStrictEqual(h.ledger, ledgerAtCompletion)) differing.push('ledger');
    // History keeps the final media (a produced episode: video and cover); the state also keeps each step's artifact.
    // A reassembly replaces the state's final video with its own.
    const finalOk = (name: string, m: unknown) =>
      isDeepStrictEqual(m, state.media[name]) ||
      (name === 'video' &&
        state.media.video !== undefined &&
        [...later].some((key) => isDeepStrictEqual(state.media[key], state.media.video)));
    if (Object.entries(h.media).some(([name, m]) => !finalOk(name, m))) differing.push('media');
    const jobs = Object.values(state.steps).filter((r) => r.remote_job_id !== null && !isLater(r));
    const missingJobs = jobs.filter((r) => !h.remote_jobs.some((j) => j.remote_job_id === r.remote_job_id));
    if (missingJobs.length > 0) differing.push('remote_jobs');
    if (differing.length > 0) {
      problems.push(
        problem(ProblemCode.HistoryStateMismatch, `differs from the state in ${differing.join(', ')}`, where),
      );
    }
  }
  for (const { value: s, file } of episodes) {
    if (s.status === 'completed' && !withHistory.has(s.episode_id)) {
      problems.push(
        problem(ProblemCode.HistoryMissing, 'completed episode without a history entry', {
          episode_id: s.episode_id,
          file,
        }),
      );
    }
  }
  return problems;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}
