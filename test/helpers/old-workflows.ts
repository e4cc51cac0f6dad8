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

/** Bundles src/workflows of `commit` (inside the repo, so its imports resolve to this checkout's node_modules). */
export async function bundleWorkflowsAt(commit: string): Promise<WorkflowBundleWithSourceMap> {
  const dir = path.join(REPO_ROOT, 'dist', 'workflows-at', commit);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = execFileSync('git', ['archive', '--format=tar', commit, 'src'], { cwd: REPO_ROOT });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  return bundleWorkflows(path.join(dir, 'src', 'workflows', 'index.ts'));
}
