/**
 * `episodes verify`: every check, over a `VerifySource`, strictly read-only. Returns the problems; the caller decides
 * the exit code.
 */
import type { EpisodeId } from '../domain/episode-id';
import { checkRecords } from './checks';
import { checkAgainstEvidence } from './evidence-check';
import { checkMediaFile } from '../files/media';
import { ProblemCode, problem, sortProblems, type Problem } from '../domain/problem';
import type { VerifySource } from './source';

export interface VerifyReport {
  ok: boolean;
  store: string;
  episodes_checked: number;
  history_checked: number;
  media_checked: number;
  problems: Problem[];
}

export async function verifyStore(
  source: VerifySource,
  options: { episodeIds?: readonly EpisodeId[] } = {},
): Promise<VerifyReport> {
  const loaded = await source.load();
  const wanted = options.episodeIds?.length ? new Set<string>(options.episodeIds) : undefined;
  const selected = <T extends { value: { episode_id: string } }>(items: T[]) =>
    wanted ? items.filter((i) => wanted.has(i.value.episode_id)) : items;
  const episodes = selected(loaded.episodes);
  const history = selected(loaded.history);

  // Uniqueness needs every episode even when only some are selected; the filter below keeps their problems only.
  const problems: Problem[] = [...loaded.problems, ...checkRecords(loaded.episodes, loaded.history)];
  let media = 0;
  for (const e of episodes) {
    const dir = source.episodeDir(e.value.episode_id);
    for (const [name, recorded] of Object.entries(e.value.media)) {
      media += 1;
      problems.push(...(await checkMediaFile(dir, name, recorded, e.value.episode_id)));
    }
    const h = history.find((x) => x.value.episode_id === e.value.episode_id);
    problems.push(...(await checkAgainstEvidence(e, h, source.evidenceBase)));
  }
  for (const id of wanted ?? []) {
    const known = [...loaded.episodes, ...loaded.history].some((x) => x.value.episode_id === id);
    const mentioned = problems.some((p) => p.episode_id === id);
    if (!known && !mentioned) {
      problems.push(
        problem(ProblemCode.EpisodeNotFound, `no episode ${id} in the ${source.description}`, { episode_id: id }),
      );
    }
  }
  const reported = sortProblems(
    wanted ? problems.filter((p) => p.episode_id !== undefined && wanted.has(p.episode_id)) : problems,
  );
  return {
    ok: reported.length === 0,
    store: source.description,
    episodes_checked: episodes.length,
    history_checked: history.length,
    media_checked: media,
    problems: reported,
  };
}
