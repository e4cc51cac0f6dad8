/**
 * A separate OS process that refreshes one review session (`touch`, as the desk does at a request) in a file store's
 * sessions directory. Usage: node session-toucher.js <sessions dir> <id sha256>; prints `ok` or the error's type.
 * Lock settings and EPISODES_FAILPOINTS come from the environment; the test freezes it inside the write.
 */
import { isPipelineError } from '../src/domain/errors';
import { FileReviewSessions } from '../src/store/file-review-sessions';
import { lockOptionsFromEnv } from '../src/store/store-config';

async function main(): Promise<void> {
  const [dir = '', id = ''] = process.argv.slice(2);
  try {
    await new FileReviewSessions(dir, lockOptionsFromEnv()).touch(id, new Date());
    process.stdout.write('ok');
  } catch (e) {
    process.stdout.write(isPipelineError(e) ? e.type : String(e));
  }
}

void main();
