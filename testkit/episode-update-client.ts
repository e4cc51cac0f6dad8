/**
 * A separate OS process that makes one no-op update of an episode (its episode lock, or the pipeline lock first while
 * its state is missing). Usage: node episode-update-client.js <episode_id>; prints `ok` or the error's type.
 * The store comes from the environment (EPISODES_DATA_DIR), as for the worker; so do EPISODES_FAILPOINTS.
 */
import { parseEpisodeId } from '../src/domain/episode-id';
import { isPipelineError } from '../src/domain/errors';
import { FileEpisodeStore } from '../src/store/file-store';

const store = new FileEpisodeStore();
store
  .updateEpisode(parseEpisodeId(process.argv[2] ?? '').episodeId, (s) => s)
  .then(
    () => process.stdout.write('ok'),
    (e: unknown) => process.stdout.write(isPipelineError(e) ? e.type : String(e)),
  );
