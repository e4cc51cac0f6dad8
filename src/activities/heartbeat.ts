import { Context } from '@temporalio/activity';

/**
 * Runs `fn` while heartbeating every second, so that Temporal notices a dead worker within the activity's
 * heartbeatTimeout instead of its (much longer) startToCloseTimeout, even while `fn` waits on a lock or the network.
 */
export async function withHeartbeat<T>(fn: () => Promise<T>): Promise<T> {
  const context = Context.current();
  context.heartbeat();
  const beat = setInterval(() => context.heartbeat(), 1000);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}
