import { Context } from '@temporalio/activity';

/**
 * The running activity's context, or undefined outside an activity: the same settlement code also runs in
 * `episodes repair`, where there is nothing to heartbeat and no metric meter (nothing is counted there).
 */
export function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}
