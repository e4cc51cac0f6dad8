/**
 * The review desk's test set-up: one dev server and one Chromium per file; per test a data dir with a file store, a
 * vendor simulator (rendering real media with ffmpeg), a worker with real activities and the vendor's prices published
 * to the store as a worker process does, and a desk on 127.0.0.1.
 */
import { execFileSync } from 'node:child_process';
import { promises as fs, mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createActivities } from '../../../src/activities';
import { parseAllocationKey } from '../../../src/domain/allocation-key';
import type { EpisodeId } from '../../../src/domain/episode-id';
import type { EpisodeState } from '../../../src/domain/episode-state';
import { productionWorkflowId } from '../../../src/domain/names';
import { parseWeekId } from '../../../src/domain/week-id';
import { AuditLog } from '../../../src/review/audit-log';
import { ReviewerStore } from '../../../src/review/reviewers';
import { startReviewDesk, type ReviewDeskOptions } from '../../../src/review/server';
import { FileEpisodeStore } from '../../../src/store/file-store';
import type { VendorSimulator } from '../../../src/vendor-sim/simulator';
import { episodeProductionWorkflow } from '../../../src/workflows';
import { publishVendorPrices } from '../../../src/process/price-publisher';
import { staticCredentialsLoader } from '../../../src/vendor-api/credentials';
import { WORKFLOW_TEST_API_KEY, spyingCredentials, startTestVendor, testDeps } from '../../../testkit/deps';
import { createTestEnv, createTestWorker, REPO_ROOT, uniqueTaskQueue, workflowBundle } from '../../../testkit/temporal';
import { until } from '../../../testkit/wait';
import { nativeVendors } from '../../../src/vendors/directory';

export function chromiumPath(): string {
  return execFileSync('bash', [path.join(REPO_ROOT, 'scripts', 'review-test-tools.sh'), 'chromium'], {
    encoding: 'utf8',
  }).trim();
}

export type AuditLine = Record<string, unknown> & { event: string };

export interface DeskHarness {
  env: TestWorkflowEnvironment;
  browser: Browser;
  dir: string;
  store: FileEpisodeStore;
  vendor: VendorSimulator;
  reviewers: ReviewerStore;
  taskQueue: string;
  url: string;
  /** The desk's audit log, one parsed line each. */
  audit: AuditLine[];
  /** Restarts the desk on the same port with other options (e.g. a tighter sign-in limit). */
  restartDesk(options?: Partial<ReviewDeskOptions>): Promise<void>;
  /** What a worker does at start and every minute: the vendor's prices (default: this test's) into the store. */
  publishPrices(vendor?: VendorSimulator): Promise<void>;
  /** Allocates an episode (in `week`, else the next of W10, W11, ...), starts its production, waits for a decision. */
  waitingEpisode(key: string, week?: string): Promise<EpisodeId>;
  waitForState(id: EpisodeId, what: string, ok: (s: EpisodeState) => boolean): Promise<EpisodeState>;
  /** A new browser context (its own cookies) signed in with this token. */
  signedIn(token: string): Promise<{ context: BrowserContext; page: Page }>;
}

export function useDeskHarness(prefix: string): DeskHarness {
  let worker: { shutdown(): void; done: Promise<void> } | undefined;
  let desk: { close(): Promise<void> } | undefined;
  const contexts: BrowserContext[] = [];
  let weekCounter = 10;
  const h = {} as DeskHarness;

  h.restartDesk = async (options = {}) => {
    // Within a test, a restarted desk keeps its address (open pages and cookies still point at it).
    const port = desk === undefined ? 0 : Number(new URL(h.url).port);
    await desk?.close();
    const started = await startReviewDesk({
      host: '127.0.0.1',
      port,
      store: h.store,
      reviewers: h.reviewers,
      getClient: () => Promise.resolve(h.env.client),
      budgetCents: 20_000,
      timeZone: 'UTC',
      audit: new AuditLog((line) => h.audit.push(JSON.parse(line) as AuditLine)),
      ...options,
    });
    desk = started;
    h.url = started.url;
  };

  h.publishPrices = async (vendor = h.vendor) => {
    const credentials = staticCredentialsLoader(WORKFLOW_TEST_API_KEY);
    const vendors = nativeVendors(credentials, { baseUrl: new URL(vendor.url), timeoutMs: 2_000 });
    await publishVendorPrices({ store: h.store, vendors });
  };

  h.waitForState = (id, what, ok) =>
    until(what, async () => {
      const s = await h.store.getEpisode(id);
      return s && ok(s) ? s : undefined;
    });

  h.waitingEpisode = async (key, week) => {
    const r = await h.store.allocate({
      allocationKey: parseAllocationKey(key),
      weekId: parseWeekId(week ?? `2026-W${weekCounter++}`),
      allocatedBy: { kind: 'test', note: 'review desk' },
    });
    await h.env.client.workflow.start(episodeProductionWorkflow, {
      workflowId: productionWorkflowId(r.episodeId),
      taskQueue: h.taskQueue,
      args: [{ episodeId: r.episodeId }],
    });
    await h.waitForState(r.episodeId, 'waiting for a decision', (s) => s.approval?.status === 'pending');
    return r.episodeId;
  };

  h.signedIn = async (token) => {
    const context = await h.browser.newContext({ baseURL: h.url });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto('/');
    await page.getByLabel('Token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Waiting for a decision' }).waitFor();
    return { context, page };
  };

  before(async function () {
    this.timeout(120_000);
    h.env = await createTestEnv();
    await workflowBundle();
    h.browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  });
  after(async () => {
    await h.browser?.close();
    await h.env?.teardown();
  });
  beforeEach(async () => {
    h.dir = mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
    h.audit = [];
    h.store = new FileEpisodeStore(h.dir);
    h.vendor = await startTestVendor();
    h.reviewers = new ReviewerStore(path.join(h.dir, 'review', 'reviewers.json'));
    h.taskQueue = uniqueTaskQueue('desk');
    const w = await createTestWorker({
      connection: h.env.nativeConnection,
      taskQueue: h.taskQueue,
      workflowBundle: await workflowBundle(),
      activities: createActivities(testDeps(h.store, h.vendor, spyingCredentials())),
    });
    worker = { shutdown: () => w.shutdown(), done: w.run() };
    await h.publishPrices();
    await h.restartDesk();
  });
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((c) => c.close()));
    await desk?.close();
    desk = undefined;
    worker?.shutdown();
    await worker?.done;
    await h.vendor.close();
    await fs.rm(h.dir, { recursive: true, force: true });
  });
  return h;
}
