import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { FileEpisodeStore } from '../../src/store/file-store';
import { weeklyEpisodeWorkflow } from '../../src/workflows';
import { createTestEnv, uniqueTaskQueue, workflowBundle } from '../helpers/temporal';

describe('weeklyEpisodeWorkflow (dev server)', function () {
  let env: TestWorkflowEnvironment;
  before(async function () {
    env = await createTestEnv();
    await workflowBundle();
  });
  after(async () => {
    await env?.teardown();
  });

  it('allocates sequences within a week and restarts at 0 in the next week', async () => {
    const store = new FileEpisodeStore(mkdtempSync(path.join(os.tmpdir(), 'wf-')));
    const taskQueue = uniqueTaskQueue();
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: createActivities({ store }),
    });
    await worker.runUntil(async () => {
      const run = (id: string, week: string) =>
        env.client.workflow.execute(weeklyEpisodeWorkflow, { workflowId: id, taskQueue, args: [{ week }] });
      assert.equal((await run('k1', '2026-W32')).episodeId, '2026-W32-0');
      assert.equal((await run('k2', '2026-W32')).episodeId, '2026-W32-1');
      assert.equal((await run('k3', '2026-W33')).episodeId, '2026-W33-0');
    });
  });
});
