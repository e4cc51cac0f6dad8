import { Context } from '@temporalio/activity';

/**
 * Runs `fn` while heartbeating every second, so that Temporal notices a dead worker within the activity's
 * heartbeatTimeout instead of its (much longer) startToCloseTimeout, even while `fn` waits on a lock or the network.
 * No heartbeat at the start: the heartbeat timeout already runs from the activity's start, and most of these
 * activities finish in milliseconds, where one more request to the server would be most of their cost.
 */
export async function withHeartbeat<T>(fn: () => Promise<T>): Promise<T> {
  const context = Context.current();
  const beat = setInterval(() => context.heartbeat(), 1000);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}
