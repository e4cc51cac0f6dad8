/**
 * The workflow code the recorded histories were recorded on (test/histories/manifest.json `recordedOnCommit`),
 * checked out of git into dist/ and bundled: the "old code" of the upgrade test, exactly as it was deployed then.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { HISTORIES_DIR } from './replay';
import { REPO_ROOT, bundleWorkflows } from './temporal';

export function recordedOnCommit(): string {
  const manifest = JSON.parse(readFileSync(path.join(HISTORIES_DIR, 'manifest.json'), 'utf8')) as {
    recordedOnCommit: string;
  };
  return manifest.recordedOnCommit;
}

/** Set by `.ci/run`: there the upgrade test must run in full, and missing history is a failure, not a pending test. */
export const REQUIRE_OLD_CODE_ENV = 'EPISODES_REQUIRE_UPGRADE_TEST';

/**
 * Why `commit` cannot be checked out here (a shallow clone such as `git clone --depth 1`, or no git at all), with the
 * command that makes it available; undefined when it can.
 */
export function oldCodeMissing(commit: string): string | undefined {
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: REPO_ROOT, stdio: 'ignore' });
    return undefined;
  } catch {
    return (
      `commit ${commit} (test/histories/manifest.json recordedOnCommit) is not in this clone's history ` +
      '(a shallow clone?); run `git fetch --unshallow` (or `git fetch origin ' +
      `${commit}\`) to enable this test`
    );
  }
}

/** Bundles src/workflows of `commit` (inside the repo, so its imports resolve to this checkout's node_modules). */
export async function bundleWorkflowsAt(commit: string): Promise<WorkflowBundleWithSourceMap> {
  const dir = path.join(REPO_ROOT, 'dist', 'workflows-at', commit);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = execFileSync('git', ['archive', '--format=tar', commit, 'src'], { cwd: REPO_ROOT });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  return bundleWorkflows(path.join(dir, 'src', 'workflows', 'index.ts'));
}
