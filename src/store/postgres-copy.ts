/**
 * `episodes store copy`: moves a file store into a PostgreSQL store, keeping every id, sequence, key, state, ledger and
 * history entry exactly as it is.
 *
 * It holds the file store's pipeline lock throughout, so it copies a consistent snapshot with no allocation in flight.
 * Episode files (everything in the source's `mediaDir(id)` but state.json: media, artifacts) and the migration evidence
 * go first, to the target's `mediaDir(id)` and media root, with the same relative paths; then all rows in one transaction; then it reads
 * them back and compares. Re-running after an interruption is safe: what is already there and identical is skipped,
 * anything that differs is refused with nothing written.
 */
import { constants as fsConstants, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { EpisodeState, HistoryEntry } from '../domain/episode-state';
import { PipelineError, ErrorType } from '../domain/errors';
import { ensureDirDurable, exists, fsyncDir, storageError } from '../files/durable-fs';
import { FileEpisodeStore } from './file-store';
import { PostgresEpisodeStore } from './postgres-store';
import { isPostgresUrl } from './postgres-url';

/** Relative to the data dir; what `migration.evidence_dir` is relative to. Copied below the target's media root. */
const EVIDENCE_ROOT = 'migration-evidence';

export interface CopyReport {
  from: string;
  to: string;
  media_root: string;
  episodes: number;
  episodes_written: number;
  episodes_unchanged: number;
  history: number;
  history_written: number;
  history_unchanged: number;
  files_copied: number;
  files_unchanged: number;
  /** Sum of every episode's ledger, per currency, as read back from the target. */
  ledger_cents: Record<string, number>;
  charges: number;
}

export async function copyFileStoreToPostgres(options: {
  fromDir: string;
  toUrl: string;
  mediaDir?: string;
}): Promise<CopyReport> {
  const fromDir = path.resolve(options.fromDir);
  if (!(await isDirectory(path.join(fromDir, 'index', 'weeks')))) {
    throw new PipelineError(ErrorType.InvalidInput, `no file store at ${fromDir} (expected ${fromDir}/index/weeks)`);
  }
  if (!isPostgresUrl(options.toUrl)) {
    throw new PipelineError(ErrorType.InvalidInput, '--to must be a postgres:// or postgresql:// URL');
  }
  const source = new FileEpisodeStore(fromDir);
  const target = new PostgresEpisodeStore({ url: options.toUrl, mediaDir: options.mediaDir });
  try {
    return await source.lock.withLock(async (guard) => {
      const episodes = await source.listEpisodes();
      const history = await source.listHistory();
      const files = { copied: 0, unchanged: 0 };
      for (const e of episodes) {
        await copyTree(source.mediaDir(e.episode_id), target.mediaDir(e.episode_id), files, ['state.json']);
      }
      await copyTree(path.join(fromDir, EVIDENCE_ROOT), path.join(target.mediaRoot, EVIDENCE_ROOT), files);
      guard.assertHeld();
      const counts = await target.importEpisodes({ episodes, history });
      const back = await readBack(target, episodes, history);
      return {
        from: fromDir,
        to: target.description,
        media_root: target.mediaRoot,
        episodes: episodes.length,
        episodes_written: counts.episodesWritten,
        episodes_unchanged: counts.episodesUnchanged,
        history: history.length,
        history_written: counts.historyWritten,
        history_unchanged: counts.historyUnchanged,
        files_copied: files.copied,
        files_unchanged: files.unchanged,
        ...ledgerTotals(back),
      };
    });
  } finally {
    await target.close();
  }
}

/** The target's copy of every source record; refuses unless each equals its source exactly. */
async function readBack(
  target: PostgresEpisodeStore,
  episodes: readonly EpisodeState[],
  history: readonly HistoryEntry[],
): Promise<EpisodeState[]> {
  const stored = new Map((await target.listEpisodes()).map((e) => [e.episode_id, e]));
  const storedHistory = new Map((await target.listHistory()).map((h) => [h.episode_id, h]));
  const differing = [
    ...episodes.filter((e) => !isDeepStrictEqual(stored.get(e.episode_id), e)),
    ...history.filter((h) => !isDeepStrictEqual(storedHistory.get(h.episode_id), h)),
  ].map((x) => x.episode_id);
  if (differing.length > 0) {
    throw new PipelineError(
      ErrorType.StoreCorrupt,
      `the ${target.description} does not read back what was copied for ${differing.join(', ')}`,
      { episodes: differing },
    );
  }
  return episodes.map((e) => stored.get(e.episode_id) ?? e);
}

export function ledgerTotals(episodes: readonly EpisodeState[]): {
  ledger_cents: Record<string, number>;
  charges: number;
} {
  const cents: Record<string, number> = {};
  let charges = 0;
  for (const e of episodes) {
    for (const l of e.ledger) {
      cents[l.currency] = (cents[l.currency] ?? 0) + l.amount_cents;
      charges++;
    }
  }
  return { ledger_cents: cents, charges };
}

/**
 * Copies regular files and directories from `from` to `to` (a missing `from` copies nothing). A file already at the
 * target with the same bytes is left alone; one with other bytes, or anything but a file or directory, is refused.
 */
async function copyTree(
  from: string,
  to: string,
  counts: { copied: number; unchanged: number },
  skip: readonly string[] = [],
): Promise<void> {
  let entries;
  try {
    entries = await fs.readdir(from, { withFileTypes: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw storageError(`cannot list ${from}`, e);
  }
  for (const entry of entries) {
    if (skip.includes(entry.name)) continue;
    const src = path.join(from, entry.name);
    const dst = path.join(to, entry.name);
    if (entry.isDirectory()) {
      await copyTree(src, dst, counts);
    } else if (entry.isFile()) {
      await copyFile(src, dst, counts);
    } else {
      throw new PipelineError(
        ErrorType.StoreCorrupt,
        `${src} is not a regular file or directory; refusing to copy it (run \`episodes verify\` on the source)`,
        { file: src },
      );
    }
  }
}

async function copyFile(src: string, dst: string, counts: { copied: number; unchanged: number }): Promise<void> {
  try {
    // The same path: the target's media root is the file store's episodes/ directory, the files stay where they are.
    if (path.resolve(src) === path.resolve(dst) || exists(dst)) {
      if (!(await sameBytes(src, dst))) {
        throw new PipelineError(ErrorType.StoreCorrupt, `${dst} exists with other content than ${src}`, { file: dst });
      }
      counts.unchanged++;
      return;
    }
    await ensureDirDurable(path.dirname(dst));
    await fs.copyFile(src, dst, fsConstants.COPYFILE_EXCL);
    const handle = await fs.open(dst, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsyncDir(path.dirname(dst));
    counts.copied++;
  } catch (e) {
    if (e instanceof PipelineError) throw e;
    throw storageError(`cannot copy ${src} to ${dst}`, e);
  }
}

async function sameBytes(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([fs.readFile(a), fs.readFile(b)]);
  return x.equals(y);
}

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await fs.stat(p)).isDirectory();
  } catch {
    return false;
  }
}
