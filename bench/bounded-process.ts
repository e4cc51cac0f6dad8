/** `node <dist script>` with a deadline: a child that hangs is killed and the benchmark fails instead of waiting. */
import { collect, spawnNode, type ProcessResult } from '../testkit/processes';
import { withTimeout } from './stats';

export async function runNodeBounded(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<ProcessResult> {
  const child = spawnNode(script, args, env);
  try {
    return await withTimeout(collect(child), timeoutMs, `node ${script}`);
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
}
