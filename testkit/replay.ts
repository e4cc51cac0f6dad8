/** Recorded histories (test/histories/<scenario>/<workflowId>.json) and their replay against a workflow bundle. */
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { REPO_ROOT } from './temporal';

export const HISTORIES_DIR = path.join(REPO_ROOT, 'test', 'histories');

export interface RecordedHistory {
  /** Relative to test/histories, e.g. `happy-path/episode-2026-W32-0.json`. */
  file: string;
  workflowId: string;
  json: { events: { eventId: string; eventType: string }[] };
}

export function recordedHistories(): RecordedHistory[] {
  return readdirSync(HISTORIES_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) =>
      readdirSync(path.join(HISTORIES_DIR, d.name))
        .filter((f) => f.endsWith('.json'))
        .sort()
        .map((f) => ({
          file: `${d.name}/${f}`,
          workflowId: f.slice(0, -'.json'.length),
          json: JSON.parse(readFileSync(path.join(HISTORIES_DIR, d.name, f), 'utf8')) as RecordedHistory['json'],
        })),
    );
}

export interface ReplayOutcome {
  file: string;
  /** Undefined when the history replayed; else the file, the first mismatching event and the SDK's message. */
  failure?: string;
}

/**
 * Replays every history, one replay worker per recorded set (`<scenario>.<set>/`: a later recording reuses the same
 * workflow IDs); a failure names the file and the first event that did not match.
 */
export async function replayAll(
  bundle: WorkflowBundleWithSourceMap,
  histories = recordedHistories(),
): Promise<ReplayOutcome[]> {
  const sets = new Map<string, RecordedHistory[]>();
  for (const h of histories) {
    const set = h.file.split('/')[0]!.split('.')[1] ?? '';
    sets.set(set, [...(sets.get(set) ?? []), h]);
  }
  const outcomes: ReplayOutcome[] = [];
  for (const [set, group] of sets) {
    const byId = new Map(group.map((h) => [h.workflowId, h]));
    const iterable = group.map((h) => ({ workflowId: h.workflowId, history: historyFromJSON(h.json) }));
    const replayName = set ? `recorded.${set}` : 'recorded';
    for await (const r of Worker.runReplayHistories({ workflowBundle: bundle, replayName }, iterable)) {
      const h = byId.get(r.workflowId)!;
      outcomes.push({ file: h.file, failure: r.error ? describeFailure(h, r.error) : undefined });
    }
  }
  return outcomes;
}

function describeFailure(h: RecordedHistory, error: Error): string {
  const core = /\[TMPRL\d+\][^"]*/.exec(error.message)?.[0] ?? error.message;
  const event = mismatchingEvent(h, core);
  const at = event ? `first mismatching event #${event.eventId} ${event.eventType}` : 'first mismatching event unknown';
  return `${h.file}: ${at}: ${core}`;
}

/**
 * Core names the event it could not match either by id ("HistoryEvent(id: 5, ...)") or by what the event holds
 * ("scheduled event 'episode-...-video-r0'"): find it in the file.
 */
function mismatchingEvent(h: RecordedHistory, message: string): RecordedHistory['json']['events'][number] | undefined {
  const id = /HistoryEvent\(id: (\d+)/.exec(message)?.[1] ?? /event (?:id )?(\d+)/i.exec(message)?.[1];
  if (id !== undefined) return h.json.events.find((e) => e.eventId === id);
  const held = /event '([^']+)'/.exec(message)?.[1];
  if (held === undefined) return undefined;
  return h.json.events.find((e) => !e.eventType.includes('WORKFLOW_TASK') && JSON.stringify(e).includes(`"${held}"`));
}
