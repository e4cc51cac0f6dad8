/**
 * The pre-built workflow bundle. `npm run build` runs `node dist/src/process/workflow-bundle.js`, which bundles the
 * compiled workflows once (webpack) into dist/workflow-bundle.js plus a manifest; the worker then loads that file
 * instead of running webpack at every start.
 *
 * The manifest fingerprints every compiled source under dist/src and the SDK's workflow package: a bundle older than
 * the code beside it (e.g. after a bare `tsc`) is never run. The worker then bundles from sources and says so.
 * The worker's build id (src/process/worker-deployment.ts) derives from codeHash: the hash of the code it runs.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { Logger, WorkerOptions } from '@temporalio/worker';
import { z } from 'zod';
import { readSetting } from '../settings/read';

const DIST = path.resolve(__dirname, '..', '..');
export const DEFAULT_BUNDLE_PATH = path.join(DIST, 'workflow-bundle.js');
const WORKFLOWS_PATH = require.resolve('../workflows');

const manifestSchema = z.object({
  schema: z.literal('workflow-bundle/v1'),
  code_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  sources_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  built_at: z.string(),
});

export type WorkflowSource =
  { kind: 'bundle'; codePath: string; sha256: string } | { kind: 'sources'; workflowsPath: string; reason: string };

export function manifestPath(codePath: string): string {
  return codePath.replace(/\.js$/, '') + '.manifest.json';
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/**
 * The hash the build id derives from: the code without its inline source map, which names the absolute path of the
 * checkout it was built in. The same commit built in two directories (CI, a deploy host) is then one version.
 */
export function codeHash(code: string | Buffer): string {
  return sha256(code.toString().replace(/\n\/\/# sourceMappingURL=data:[^\n]*\s*$/, '\n'));
}

/** What the bundle was built from: every compiled file under dist/src and the SDK's workflow runtime version. */
async function sourcesFingerprint(): Promise<string> {
  const root = path.join(DIST, 'src');
  const files = (await fs.readdir(root, { recursive: true })).filter((f) => f.endsWith('.js')).sort();
  const hash = createHash('sha256');
  for (const f of files)
    hash
      .update(`${f}\0`)
      .update(await fs.readFile(path.join(root, f)))
      .update('\0');
  const sdk = require.resolve('@temporalio/workflow/package.json');
  hash.update(await fs.readFile(sdk));
  return hash.digest('hex');
}

export async function buildWorkflowBundle(codePath = DEFAULT_BUNDLE_PATH, logger?: Logger): Promise<string> {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, ...(logger ? { logger } : {}) });
  return writeWorkflowBundle(codePath, code);
}

/** Writes the code and its manifest (hash of the file, fingerprint of the sources it was built from); returns codeHash. */
export async function writeWorkflowBundle(codePath: string, code: string): Promise<string> {
  await fs.writeFile(codePath, code);
  const manifest: z.infer<typeof manifestSchema> = {
    schema: 'workflow-bundle/v1',
    code_sha256: sha256(code),
    sources_sha256: await sourcesFingerprint(),
    built_at: new Date().toISOString(),
  };
  await fs.writeFile(manifestPath(codePath), `${JSON.stringify(manifest, null, 2)}\n`);
  return codeHash(code);
}

/** The bundle when it is present and current, else the sources with the reason. Never throws for a bad bundle. */
export async function resolveWorkflowSource(env: NodeJS.ProcessEnv = process.env): Promise<WorkflowSource> {
  // A bundle file, or `off` to always bundle from sources (the bench's "before").
  const codePath = readSetting('EPISODES_WORKFLOW_BUNDLE', env) ?? DEFAULT_BUNDLE_PATH;
  const sources = (reason: string): WorkflowSource => ({ kind: 'sources', workflowsPath: WORKFLOWS_PATH, reason });
  if (codePath === 'off') return sources('EPISODES_WORKFLOW_BUNDLE=off');
  let code: Buffer;
  let manifest: z.infer<typeof manifestSchema>;
  try {
    code = await fs.readFile(codePath);
    manifest = manifestSchema.parse(JSON.parse(await fs.readFile(manifestPath(codePath), 'utf8')));
  } catch (e) {
    const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
    return sources(missing ? `no pre-built bundle at ${codePath} (npm run build writes it)` : `unreadable ${codePath}`);
  }
  if (sha256(code) !== manifest.code_sha256) return sources(`${codePath} does not match its manifest`);
  if ((await sourcesFingerprint()) !== manifest.sources_sha256) {
    return sources(`${codePath} is older than the compiled sources (run npm run build)`);
  }
  return { kind: 'bundle', codePath, sha256: codeHash(code) };
}

/**
 * Worker options for the source, its sha256 (the build id derives from it), and the start-up line that names it. From
 * sources, the workflows are bundled here (as the SDK would at Worker.create), so that they too have a hash.
 */
export async function workflowSourceOptions(
  source: WorkflowSource,
  logger: Logger,
): Promise<{ options: Pick<WorkerOptions, 'workflowBundle'>; sha256: string }> {
  if (source.kind === 'bundle') {
    logger.info(`worker: workflow bundle sha256 ${source.sha256}`, {
      workflowBundleSha256: source.sha256,
      path: source.codePath,
    });
    return { options: { workflowBundle: { codePath: source.codePath } }, sha256: source.sha256 };
  }
  logger.warn(`worker: bundling workflows from sources at start: ${source.reason}`);
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const { code } = await bundleWorkflowCode({ workflowsPath: source.workflowsPath, logger });
  return { options: { workflowBundle: { code } }, sha256: codeHash(code) };
}

if (require.main === module) {
  const quiet = () => undefined;
  const logger: Logger = {
    log: quiet,
    trace: quiet,
    debug: quiet,
    info: quiet,
    warn: console.warn,
    error: console.error,
  };
  buildWorkflowBundle(DEFAULT_BUNDLE_PATH, logger).then(
    (hash) => console.log(`workflow bundle: ${path.relative(process.cwd(), DEFAULT_BUNDLE_PATH)} sha256 ${hash}`),
    (e: unknown) => {
      console.error('workflow bundle failed:', e);
      process.exit(1);
    },
  );
}
