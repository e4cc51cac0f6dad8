/**
 * What `review serve` checks before it listens: every file a sign-in reads or writes (the reviewers file, the session
 * store; the audit log is opened, with the same checks, before this). A bad one stops the start with the reason and
 * the command that fixes it, instead of a 500 at every sign-in.
 */
import * as fs from 'node:fs';
import { ErrorType, isPipelineError, PipelineError } from '../domain/errors';
import { FileReviewSessions } from '../store/file-review-sessions';
import type { ReviewSessionStore } from '../store/review-sessions';
import type { ReviewerStore } from './reviewers';

export async function checkDeskFiles(reviewers: ReviewerStore, sessions: ReviewSessionStore): Promise<void> {
  try {
    reviewers.list();
    if (sessions instanceof FileReviewSessions) checkSessionsDir(sessions.dir);
    await sessions.list();
  } catch (e) {
    if (!isPipelineError(e)) throw e;
    const fix = e.type === ErrorType.StoreCorrupt ? '; move the file named aside, then start again' : '';
    throw new PipelineError(e.type, `the review desk cannot start: ${e.message}${fix}`, e.details, { cause: e });
  }
}

/** The file store's sessions: a directory of this user's alone (made 0700), since each file there is a session. */
function checkSessionsDir(dir: string): void {
  const st = fs.lstatSync(dir, { throwIfNoEntry: false });
  if (st === undefined) return;
  const refuse = (problem: string) =>
    new PipelineError(ErrorType.InvalidState, `the review sessions directory ${dir} ${problem}`, { file: dir });
  if (st.isSymbolicLink()) throw refuse('is a symlink; give the real directory');
  if (!st.isDirectory()) throw refuse('is not a directory');
  const uid = process.geteuid?.();
  if (uid !== undefined && st.uid !== uid) throw refuse(`is owned by uid ${st.uid}; run chown -R ${uid} ${dir}`);
  if ((st.mode & 0o077) !== 0) throw refuse(`has mode ${(st.mode & 0o777).toString(8)}; run chmod 700 ${dir}`);
}
