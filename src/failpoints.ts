/**
 * Failpoints: named places at durable steps where tests make a process die, throw or stall.
 * Off unless EPISODES_FAILPOINTS names a point, e.g. `allocation.after-commit=kill,submission.accepted=delay:500`.
 * When the variable is unset `failpoint()` is a single map lookup on an empty map.
 *
 * Actions: `kill` (SIGKILL this process), `throw` (a plain Error), `delay:<ms>`, `enospc` / `eio` (a StorageFailure with
 * that errno `code`, as a real disk error surfaces). An optional `@<n>` suffix fires only on the n-th hit (1-based), e.g.
 * `allocation.after-commit=kill@3`. `fs.write` sits half-way through every durable file write (`fs.write=enospc@2`
 * fails the second write of the process with its temp file half written).
 */
import { PipelineError } from './domain/errors';
import { ErrorType } from './shared';

type Action = { kind: 'kill' | 'throw' | 'enospc' | 'eio' } | { kind: 'delay'; ms: number };

interface Rule {
  action: Action;
  onHit: number | null;
  hits: number;
}

function parseRules(spec: string | undefined): Map<string, Rule> {
  const rules = new Map<string, Rule>();
  for (const raw of (spec ?? '').split(',')) {
    const item = raw.trim();
    if (!item) continue;
    const m = /^([a-z0-9.-]+)=(kill|throw|enospc|eio|delay:(\d+))(?:@(\d+))?$/.exec(item);
    if (!m) throw new Error(`EPISODES_FAILPOINTS: cannot parse ${JSON.stringify(item)}`);
    const [, name, actionText, ms, nth] = m;
    const action: Action =
      ms !== undefined
        ? { kind: 'delay', ms: Number(ms) }
        : { kind: actionText as 'kill' | 'throw' | 'enospc' | 'eio' };
    rules.set(name!, { action, onHit: nth === undefined ? null : Number(nth), hits: 0 });
  }
  return rules;
}

const rules = parseRules(process.env.EPISODES_FAILPOINTS);

export class FailpointError extends Error {
  constructor(
    readonly point: string,
    readonly code?: string,
  ) {
    super(code ? `${code}: injected at failpoint ${point}` : `injected failure at failpoint ${point}`);
  }
}

export async function failpoint(name: string): Promise<void> {
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
    case 'delay':
      await new Promise((resolve) => setTimeout(resolve, (rule.action as { ms: number }).ms));
      return;
  }
}
