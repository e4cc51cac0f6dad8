/**
 * The pure parts of the worker's telemetry and start-up settings: the environment they accept and refuse, the two
 * log formats, and which workflow source a worker picks (pre-built bundle or sources) for a current, tampered, stale
 * or missing bundle. The worker process itself is tested in worker-telemetry.test.ts.
 */
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { episodeIdOfWorkflowId } from '../../../src/domain/names';
import { createLogger, loadTelemetryConfig } from '../../../src/process/telemetry';
import { DEFAULT_MAX_CACHED_WORKFLOWS, workerCacheOptions } from '../../../src/process/worker-cache';
import {
  codeHash,
  manifestPath,
  resolveWorkflowSource,
  writeWorkflowBundle,
} from '../../../src/process/workflow-bundle';

describe('telemetry and worker settings from the environment', () => {
  it('metrics are off unless EPISODES_METRICS_ADDRESS is a host:port; text logs by default', () => {
    assert.deepEqual(loadTelemetryConfig({}), { metricsAddress: undefined, logFormat: 'text', logLevel: 'INFO' });
    assert.equal(loadTelemetryConfig({ EPISODES_METRICS_ADDRESS: '' }).metricsAddress, undefined);
    assert.equal(loadTelemetryConfig({ EPISODES_METRICS_ADDRESS: '127.0.0.1:9464' }).metricsAddress, '127.0.0.1:9464');
    assert.equal(loadTelemetryConfig({ EPISODES_METRICS_ADDRESS: '[::1]:9464' }).metricsAddress, '[::1]:9464');
    for (const bad of ['9464', '127.0.0.1', '127.0.0.1:99999', 'http://127.0.0.1:9464', 'a b:1']) {
      assert.throws(() => loadTelemetryConfig({ EPISODES_METRICS_ADDRESS: bad }), bad);
    }
    assert.equal(loadTelemetryConfig({ EPISODES_LOG_FORMAT: 'json' }).logFormat, 'json');
    assert.throws(() => loadTelemetryConfig({ EPISODES_LOG_FORMAT: 'xml' }));
  });

  it('EPISODES_MAX_CACHED_WORKFLOWS: a bounded default, 0 or 2..100000, task slots never above the cache', () => {
    assert.deepEqual(workerCacheOptions({}), {
      maxCachedWorkflows: DEFAULT_MAX_CACHED_WORKFLOWS,
      maxConcurrentWorkflowTaskExecutions: 40,
    });
    assert.deepEqual(workerCacheOptions({ EPISODES_MAX_CACHED_WORKFLOWS: '10' }), {
      maxCachedWorkflows: 10,
      maxConcurrentWorkflowTaskExecutions: 10,
    });
    assert.deepEqual(workerCacheOptions({ EPISODES_MAX_CACHED_WORKFLOWS: '0' }), { maxCachedWorkflows: 0 });
    for (const bad of ['1', '-5', '2.5', 'many', '100001']) {
      assert.throws(() => workerCacheOptions({ EPISODES_MAX_CACHED_WORKFLOWS: bad }), bad);
    }
  });
});

describe('log formats', () => {
  const capture = (format: 'text' | 'json') => {
    const lines: string[] = [];
    return { lines, logger: createLogger(format, 'DEBUG', (l) => lines.push(l)) };
  };

  it('json: one object per line with the correlation fields, the episode taken from the workflow id', () => {
    const { lines, logger } = capture('json');
    logger.info('activity done', {
      sdkComponent: 'activity',
      workflowId: 'episode-2026-W32-1-video-r0',
      activityType: 'awaitPaidStep',
      attempt: 2,
    });
    logger.warn('plain');
    logger.error('with error\nand a second line', { error: new Error('boom\nline two') });
    assert.equal(lines.length, 3);
    assert.ok(
      lines.every((l) => l.endsWith('\n') && l.indexOf('\n') === l.length - 1),
      'one line each',
    );
    const [first, second, third] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(first!.level, 'INFO');
    assert.equal(first!.workflow_id, 'episode-2026-W32-1-video-r0');
    assert.equal(first!.episode_id, '2026-W32-1');
    assert.equal(first!.activity_type, 'awaitPaidStep');
    assert.equal(first!.attempt, 2);
    assert.ok(!Number.isNaN(Date.parse(String(first!.ts))));
    assert.equal(second!.message, 'plain');
    assert.equal((third!.error as { message: string }).message, 'boom\nline two');
  });

  it('text: readable lines, not JSON', () => {
    const { lines, logger } = capture('text');
    logger.info('worker: task queue q', { taskQueue: 'q' });
    assert.match(lines[0]!, /^\d{4}-\d{2}-\d{2}T\S+ \[INFO\] worker: task queue q \{ taskQueue: 'q' \}\n$/);
    assert.throws(() => JSON.parse(lines[0]!) as unknown);
  });

  it('episode ids come only from this pipeline’s workflow ids', () => {
    assert.equal(episodeIdOfWorkflowId('episode-2026-W32-12'), '2026-W32-12');
    assert.equal(episodeIdOfWorkflowId('episode-2026-W32-1-reassembly-r0'), '2026-W32-1');
    assert.equal(episodeIdOfWorkflowId('weekly-media-2026-08-03T09:00:00Z'), undefined);
    assert.equal(episodeIdOfWorkflowId('episode-2026-W32-1x'), undefined);
  });
});

describe('pre-built workflow bundle: used only when current', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bundle-'));
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  it('the code hash (the build id) ignores the inline source map, which names the checkout; code changes change it', async () => {
    const map = (dir: string) =>
      `\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(dir).toString('base64')}`;
    const a = await writeWorkflowBundle(path.join(dir, 'a.js'), `exports.x = 1;${map('/work/a/dist')}`);
    const b = await writeWorkflowBundle(path.join(dir, 'b.js'), `exports.x = 1;${map('/tmp/ci/dist')}`);
    const c = await writeWorkflowBundle(path.join(dir, 'c.js'), `exports.x = 2;${map('/work/a/dist')}`);
    assert.equal(a, b);
    assert.notEqual(a, c);
    assert.equal(a, codeHash('exports.x = 1;\n'));
  });

  it('a current bundle is loaded by path with its sha256; tampered, stale, missing or off → sources, with why', async () => {
    const codePath = path.join(dir, 'workflow-bundle.js');
    const hash = await writeWorkflowBundle(codePath, '/* bundle */');
    const env = { EPISODES_WORKFLOW_BUNDLE: codePath };
    assert.deepEqual(await resolveWorkflowSource(env), { kind: 'bundle', codePath, sha256: hash });

    await fs.writeFile(codePath, '/* changed */');
    const tampered = await resolveWorkflowSource(env);
    assert.ok(tampered.kind === 'sources' && /does not match its manifest/.test(tampered.reason));

    await writeWorkflowBundle(codePath, '/* bundle */');
    const manifest = JSON.parse(await fs.readFile(manifestPath(codePath), 'utf8')) as Record<string, string>;
    await fs.writeFile(manifestPath(codePath), JSON.stringify({ ...manifest, sources_sha256: '0'.repeat(64) }));
    const stale = await resolveWorkflowSource(env);
    assert.ok(stale.kind === 'sources' && /older than the compiled sources/.test(stale.reason));

    const missing = await resolveWorkflowSource({ EPISODES_WORKFLOW_BUNDLE: path.join(dir, 'none.js') });
    assert.ok(missing.kind === 'sources' && /no pre-built bundle/.test(missing.reason));
    assert.equal((await resolveWorkflowSource({ EPISODES_WORKFLOW_BUNDLE: 'off' })).kind, 'sources');
  });
});
