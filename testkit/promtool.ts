/** Debian's promtool (scripts/review-test-tools.sh installs it when missing), run on text or on files. */
import { execFileSync, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { REPO_ROOT } from './temporal';

let found: string | undefined;

export function promtoolPath(): string {
  found ??= execFileSync('bash', [path.join(REPO_ROOT, 'scripts', 'review-test-tools.sh'), 'promtool'], {
    encoding: 'utf8',
  }).trim();
  return found;
}

export interface PromtoolResult {
  code: number | null;
  output: string;
}

/** `promtool <args...>`, with `input` on stdin; stdout and stderr together, as an operator would read them. */
export function promtool(args: string[], input = ''): PromtoolResult {
  const r = spawnSync(promtoolPath(), args, { input, encoding: 'utf8', cwd: REPO_ROOT });
  return { code: r.status, output: `${r.stdout}${r.stderr}`.trim() };
}
