/**
 * Worker versioning without a server: the behaviour each workflow type declares, the deployment settings and routing
 * lines, and that versioning does not replace the replay check: a build that changes a workflow without a patch still
 * fails test/histories/ (deploy.test.ts runs the versions on the dev server).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { previousCurrent } from '../../../src/cli/deploy-commands';
import {
  describeRouting,
  loadDeploymentSettings,
  type DeploymentFacts,
  type VersionFacts,
} from '../../../src/process/worker-deployment';
import * as workflows from '../../../src/workflows';
import { replayAll } from '../../../testkit/replay';
import { REPO_ROOT, bundleWorkflows } from '../../../testkit/temporal';

describe('worker versioning', function () {
  this.timeout(180_000);

  it('declares a behaviour for every workflow type: long waits AUTO_UPGRADE, paid work PINNED', () => {
    const declared = Object.fromEntries(
      Object.entries(workflows).map(([name, fn]) => [
        name,
        (fn as { workflowDefinitionOptions?: { versioningBehavior?: string } }).workflowDefinitionOptions
          ?.versioningBehavior,
      ]),
    );
    assert.deepEqual(declared, {
      weeklyEpisodeWorkflow: 'AUTO_UPGRADE',
      episodeProductionWorkflow: 'AUTO_UPGRADE',
      paidStepWorkflow: 'PINNED',
      episodeReassemblyWorkflow: 'PINNED',
    });
  });

  it('reads the deployment name and build id, refusing ones the version strings cannot hold', () => {
    assert.deepEqual(loadDeploymentSettings({}), { deploymentName: 'weekly-media', buildId: undefined });
    assert.deepEqual(loadDeploymentSettings({ EPISODES_DEPLOYMENT_NAME: 'media-eu', EPISODES_BUILD_ID: 'v1.2.3' }), {
      deploymentName: 'media-eu',
      buildId: 'v1.2.3',
    });
    assert.throws(() => loadDeploymentSettings({ EPISODES_DEPLOYMENT_NAME: 'a.b' }));
    assert.throws(() => loadDeploymentSettings({ EPISODES_BUILD_ID: 'a:b' }));
  });

  it("names the version in the start line, and what to run when it is not current; rollback's target", () => {
    const at = (iso: string) => new Date(iso);
    const version = (buildId: string, lastCurrentAt?: Date): VersionFacts => ({
      buildId,
      status: 'inactive',
      lastCurrentAt,
    });
    const facts: DeploymentFacts = {
      deploymentName: 'weekly-media',
      exists: true,
      current: 'b3',
      ramping: { buildId: 'b4', percent: 10 },
      routingEverSet: true,
      versions: [version('b1', at('2026-01-01')), version('b2', at('2026-02-01')), version('b3', at('2026-03-01'))],
    };
    const of = (buildId: string) => describeRouting(facts, { deploymentName: 'weekly-media', buildId });
    assert.equal(of('b3'), 'deployment version weekly-media:b3 (current)');
    assert.match(
      of('b4'),
      /\(ramping, 10% of new runs; current is b3\): to finish, run `npx episodes deploy promote --build-id b4`/,
    );
    assert.match(of('b5'), /\(not current; current is b3\): .*`npx episodes deploy promote --build-id b5`/);
    const fresh = { ...facts, exists: false, current: undefined, ramping: undefined, routingEverSet: false };
    assert.match(describeRouting(fresh, { deploymentName: 'weekly-media', buildId: 'b1' }), /first build/);
    // b4 only ramped, never current: the previous current is b2.
    assert.equal(previousCurrent({ ...facts, versions: [...facts.versions, version('b4')] }), 'b2');
    assert.equal(previousCurrent({ ...facts, versions: [version('b3', at('2026-03-01'))] }), undefined);
  });

  it('a build that changes the production workflow without a patch fails the replay of the recorded histories', async () => {
    // The compiled sources, copied, with the two first paid steps started in the other order and no patched().
    const copy = path.join(REPO_ROOT, 'dist', 'workflows-changed');
    await fs.rm(copy, { recursive: true, force: true });
    execFileSync('cp', ['-r', path.join(REPO_ROOT, 'dist', 'src'), copy]);
    const file = path.join(copy, 'workflows', 'episode-production.js');
    const code = await fs.readFile(file, 'utf8');
    const video = "step('video', 0, { title: `Episode ${episodeId}`, format: 'mp4' }),";
    const cover = "step('cover', 0, { title: `Episode ${episodeId}`, format: 'png' }),";
    assert.ok(code.includes(`${video}\n        ${cover}`), 'the compiled production starts video, then cover');
    await fs.writeFile(file, code.replace(`${video}\n        ${cover}`, `${cover}\n        ${video}`));

    const outcomes = await replayAll(await bundleWorkflows(path.join(copy, 'workflows', 'index.js')));
    const failed = outcomes.filter((o) => o.failure !== undefined).map((o) => o.file);
    assert.ok(failed.includes('happy-path/episode-2026-W32-0.json'), `failed: ${failed.join(', ')}`);
    assert.ok(
      failed.every((f) => /\/episode-\d{4}-W\d{2}-\d+\.json$/.test(f)),
      'only productions fail: the other workflows did not change',
    );
  });
});
