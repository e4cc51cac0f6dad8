/**
 * Failpoints: named places at durable steps where tests make a process die, throw or stall.
 * Off unless EPISODES_FAILPOINTS names a point, e.g. `allocation.index-written=kill,submission.accepted=delay:500`, in
 * a process of a test run (EPISODES_TEST_PROCESS, set by testkit/setup.ts).
 * When the variable is unset `failpoint()` is a single map lookup on an empty map.
 *
 * Actions: `kill` (SIGKILL this process), `stop` (SIGSTOP: frozen until someone sends SIGCONT), `throw` (a plain Error),
 * `delay:<ms>` (announced by one line on stderr), `enospc` / `eio` (a StorageFailure with that errno `code`, as a real
 * disk error surfaces). An optional `@<n>` suffix fires only on the n-th hit (1-based), e.g.
 * `allocation.index-written=kill@3`. `fs.write` sits half-way through every durable file write (`fs.write=enospc@2`
 * fails the second write of the process with its temp file half written).
 */
import { PipelineError, ErrorType } from '../domain/errors';
import { readSetting } from '../settings/read';

/** Every failpoint there is. A name outside this list is refused when EPISODES_FAILPOINTS is parsed, not ignored. */
export const FAILPOINT_NAMES = [
  'allocation.lock-taken',
  'episode.lock-taken',
  'allocation.decided',
  'allocation.key-written',
  'allocation.index-written',
  'allocation.state-written',
  'allocation.before-return',
  'submission.intent-saved',
  'submission.accepted',
  'submission.reference-saved',
  'submission.artifact-downloaded',
  'submission.ledger-written',
  'progress.recorded',
  'completion.state-written',
  'completion.before-history',
  'completion.after-history',
  'review-notice.sent',
  'fs.write',
  'migration.preflight-passed',
  'migration.journal-written',
  'migration.state-evidence-written',
  'migration.history-evidence-written',
  'migration.directory-moved',
  'migration.state-written',
  'migration.history-written',
  'migration.legacy-history-removed',
  'migration.index-written',
] as const;
export type FailpointName = (typeof FAILPOINT_NAMES)[number];

function isFailpointName(name: string): name is FailpointName {
  return (FAILPOINT_NAMES as readonly string[]).includes(name);
}

type Action = { kind: 'kill' | 'stop' | 'throw' | 'enospc' | 'eio' } | { kind: 'delay'; ms: number };

interface Rule {
  action: Action;
  onHit: number | null;
  hits: number;
}

export function parseFailpoints(spec: string | undefined): Map<FailpointName, Rule> {
  const rules = new Map<FailpointName, Rule>();
  for (const raw of (spec ?? '').split(',')) {
    const item = raw.trim();
    if (!item) continue;
    const m = /^([a-z0-9.-]+)=(kill|stop|throw|enospc|eio|delay:(\d+))(?:@(\d+))?$/.exec(item);
    if (!m) throw new Error(`EPISODES_FAILPOINTS: cannot parse ${JSON.stringify(item)}`);
    const [, name = '', actionText, ms, nth] = m;
    if (!isFailpointName(name)) throw new Error(`EPISODES_FAILPOINTS: no failpoint is named ${JSON.stringify(name)}`);
    const action: Action =
      ms !== undefined
        ? { kind: 'delay', ms: Number(ms) }
        : { kind: actionText as 'kill' | 'stop' | 'throw' | 'enospc' | 'eio' };
    rules.set(name, { action, onHit: nth === undefined ? null : Number(nth), hits: 0 });
  }
  return rules;
}

// Parsed at the first failpoint reached, not at import: importing this module reads no environment.
let rules: Map<FailpointName, Rule> | undefined;

export class FailpointError extends Error {
  constructor(
    readonly point: FailpointName,
    readonly code?: string,
  ) {
    super(code ? `${code}: injected at failpoint ${point}` : `injected failure at failpoint ${point}`);
  }
}

/**
 * A production process must not die or stall on request: EPISODES_FAILPOINTS without the test runner's marker
 * (EPISODES_TEST_PROCESS) stops the worker and the desk at start. Elsewhere (the CLI) the failpoints stay inert.
 */
export function refuseFailpointsOutsideTests(env: NodeJS.ProcessEnv = process.env): void {
  if (!readSetting('EPISODES_FAILPOINTS', env) || readSetting('EPISODES_TEST_PROCESS', env) !== undefined) return;
  throw new PipelineError(
    ErrorType.InvalidInput,
    'EPISODES_FAILPOINTS is set: it makes this process die or stall on purpose and is for test runs only; unset it',
  );
}

export async function failpoint(name: FailpointName): Promise<void> {
  rules ??= parseFailpoints(readSetting('EPISODES_TEST_PROCESS') ? readSetting('EPISODES_FAILPOINTS') : undefined);
  if (rules.size === 0) return;
  const rule = rules.get(name);
  if (!rule) return;
  rule.hits += 1;
  if (rule.onHit !== null && rule.hits !== rule.onHit) return;
  switch (rule.action.kind) {
    case 'kill':
      process.kill(process.pid, 'SIGKILL');
      // SIGKILL is delivered asynchronously; never let the caller run past the point.
      await new Promise<never>(() => undefined);
      return;
    case 'stop':
      // Frozen where it stands, holding whatever it holds, until a SIGCONT: a process paused past its lease.
      process.kill(process.pid, 'SIGSTOP');
      return;
    case 'throw':
      throw new FailpointError(name);
    case 'enospc':
    case 'eio': {
      // Typed as storageError types a real one (retryable StorageFailure), and fs-shaped (`code`) for code that wraps it.
      const code = rule.action.kind.toUpperCase();
      const cause = Object.assign(new FailpointError(name, code), { code });
      throw Object.assign(
        new PipelineError(ErrorType.StorageFailure, cause.message, { code, failpoint: name }, { cause }),
        { code },
      );
    }
    case 'delay': {
      const { ms } = rule.action;
      // One line, so that a test can act at this moment (freeze the process, fault the store): a logical event.
      process.stderr.write(`failpoint ${name}: delay ${ms} ms (pid ${process.pid})\n`);
      await new Promise((resolve) => setTimeout(resolve, ms));
      return;
    }
  }
}
