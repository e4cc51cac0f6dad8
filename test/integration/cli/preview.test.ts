/**
 * `episodes preview` against what `npm run demo` then allocates: a real dev server, the demo process (its worker, the
 * vendor simulator, one triggered run) and the CLI process, on one data dir. The preview writes nothing (the data dir's
 * tree is byte-for-byte the same after it), and its "now" row names the id the next demo is given. The demo's worker
 * serves EPISODES_METRICS_ADDRESS, and promtool finds nothing to say about it.
 */
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { previewEpisodeIds } from '../../../src/cli/preview-commands';
import { parseEpisodeId } from '../../../src/domain/episode-id';
import { parseWeekId } from '../../../src/domain/week-id';
import { collect, runCli, spawnNode, type ProcessResult } from '../../../testkit/processes';
import { promtool } from '../../../testkit/promtool';
import { createTestEnv, uniqueTaskQueue } from '../../../testkit/temporal';
import { snapshotTree } from '../../../testkit/tree';
import { closedPort } from '../../../testkit/vendor';
import { until } from '../../../testkit/wait';
import { sumOf, parsePrometheus } from '../../../testkit/prometheus';

interface PreviewJson {
  slots: { slot: string; week_id: string; episode_id: string | null }[];
  note: string;
}

describe('episodes preview: the next slots and the ids they would take, read-only', function () {
  this.timeout(240_000);
  let env: TestWorkflowEnvironment;
  let root: string;
  before(async () => {
    env = await createTestEnv();
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'preview-'));
  });
  after(async () => {
    await env?.teardown();
    await fs.rm(root, { recursive: true, force: true });
  });

  it('counts slots of one week in order, and the stored episodes of each week', () => {
    const w1 = parseWeekId('2026-W49');
    const w2 = parseWeekId('2026-W50');
    const stored = new Map([[w1, [1, 4].map((sequence) => ({ ...ref(w1, sequence), allocationKey: 'k' }))]]);
    const slots = [
      { slot: 'now' as const, weekId: w1 },
      { slot: new Date('2026-12-03T09:00:00Z'), weekId: w1 },
      { slot: new Date('2026-12-07T09:00:00Z'), weekId: w2 },
    ];
    assert.deepEqual(
      previewEpisodeIds(slots, stored).map((s) => s.episodeId),
      ['2026-W49-5', '2026-W49-6', '2026-W50-0'],
    );
  });

  it('the "now" row is what the next demo allocates; nothing written; the demo serves promtool-clean metrics', async () => {
    const dataDir = path.join(root, 'data');
    const common = {
      TEMPORAL_ADDRESS: env.address,
      EPISODES_TASK_QUEUE: uniqueTaskQueue('preview'),
      EPISODES_DATA_DIR: dataDir,
      EPISODES_STORE_URL: '',
      EPISODES_VENDOR_API_KEY: '',
    };
    const refused = await runCli(['preview'], common);
    assert.equal(refused.code, 1, 'no schedule yet');
    assert.match(refused.stderr, /schedule ensure/);

    const first = await demo({ ...common, EPISODES_DEMO_VENDOR_PORT: String(await closedPort()) }, true);
    const before = await snapshotTree(dataDir);
    const run = await runCli(['preview', '--slots', '2', '--json'], common);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(await snapshotTree(dataDir), before, 'preview wrote nothing');
    const preview = JSON.parse(run.stdout) as PreviewJson;
    assert.equal(preview.slots.length, 3, 'now and two scheduled slots');
    assert.match(preview.note, /decided when a run starts, by allocation/);
    const firstId = parseEpisodeId(first.allocated);
    assert.equal(preview.slots[0]?.episode_id, `${firstId.weekId}-${firstId.sequence + 1}`);
    for (const s of preview.slots.slice(1)) assert.ok(!Number.isNaN(Date.parse(s.slot)), s.slot);

    const second = await demo({ ...common, EPISODES_DEMO_VENDOR_PORT: String(await closedPort()) }, false);
    assert.equal(second.allocated, preview.slots[0]?.episode_id, 'the preview named the id the demo was given');
    const text = await runCli(['preview', '--slots', '1'], common);
    assert.match(text.stdout, /Ids are decided when a run starts/);
  });

  /** Runs `npm run demo`'s program; with `scrape`, checks its worker's /metrics while it runs. */
  async function demo(env: NodeJS.ProcessEnv, scrape: boolean): Promise<ProcessResult & { allocated: string }> {
    const address = `127.0.0.1:${await closedPort()}`;
    const child = spawnNode('src/demo.js', [], { ...env, EPISODES_METRICS_ADDRESS: address });
    const done = collect(child);
    let text = '';
    if (scrape) {
      text = await until('the demo worker counts its allocation', async () => {
        const body = await (await fetch(`http://${address}/metrics`)).text();
        return sumOf(parsePrometheus(body), 'episodes_allocations_total', {}) >= 1 ? body : undefined;
      });
    }
    const r = await done;
    assert.equal(r.code, 0, r.stderr);
    if (scrape) assert.deepEqual(promtool(['check', 'metrics'], text), { code: 0, output: '' });
    const allocated = /^allocated (\S+) /m.exec(r.stdout)?.[1];
    assert.ok(allocated, r.stdout);
    return { ...r, allocated };
  }
});

function ref(weekId: ReturnType<typeof parseWeekId>, sequence: number) {
  return { episodeId: parseEpisodeId(`${weekId}-${sequence}`).episodeId, weekId, sequence };
}
