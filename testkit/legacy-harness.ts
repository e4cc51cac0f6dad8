/** Helpers of the migration and verify tests: the real CLI in a child process, and whole-tree snapshots. */
import { spawn, type SpawnOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { collect, type ProcessResult } from './processes';
import { writeLegacyFixture, type LegacyFixture } from './legacy-fixture';

/** dist/ (tests run from dist/test/...). */
export const DIST_DIR = path.resolve(__dirname, '..');
export const CLI = path.join(DIST_DIR, 'src', 'cli.js');

export type CliRun = ProcessResult;

/** `node [nodeArgs] dist/src/cli.js args`, with a short stale-lock time so a killed run's lock is taken over fast. */
export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; nodeArgs?: string[]; spawn?: SpawnOptions } = {},
): Promise<CliRun> {
  const env = {
    ...process.env,
    EPISODES_LOCK_STALE_MS: '2000',
    EPISODES_FAILPOINTS: '',
    EPISODES_STORE_URL: '',
    ...options.env,
  };
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), CLI, ...args], {
    ...options.spawn,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collect(child);
}

export async function runCliJson<T>(args: string[], env?: NodeJS.ProcessEnv): Promise<CliRun & { json: T }> {
  const run = await runCli([...args, '--json'], { env });
  let json: unknown;
  try {
    json = JSON.parse(run.stdout);
  } catch {
    throw new Error(`no JSON on stdout (exit ${run.code}): ${run.stdout}\n${run.stderr}`);
  }
  return { ...run, json: json as T };
}

export async function tempDir(prefix = 'legacy-'): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), prefix));
}

/** Mocha hooks for a fresh legacy data dir per test; read `dataDir` and `fixture` inside the tests. */
export function legacyDirPerTest(): { dataDir: string; fixture: LegacyFixture } {
  const current = { dataDir: '', fixture: undefined as unknown as LegacyFixture };
  beforeEach(async () => {
    current.dataDir = await tempDir();
    current.fixture = await writeLegacyFixture(current.dataDir);
  });
  afterEach(async () => {
    await fs.rm(current.dataDir, { recursive: true, force: true });
  });
  return current;
}

export interface SnapshotOptions {
  /** Record mtimes (and for directories, their entry lists change them): for "leaves no trace". */
  mtimes?: boolean;
  /** Replace `"migrated_at": "<instant>"` in file contents: for comparing runs made at different times. */
  normalizeTimes?: boolean;
}

/** Every entry below `root`: kind, mode, size, sha256 of the content; optionally mtimes. */
export async function snapshotTree(root: string, options: SnapshotOptions = {}): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const name of (await fs.readdir(dir)).sort()) {
      const p = path.join(dir, name);
      const rel = path.relative(root, p);
      const st = await fs.lstat(p);
      const mtime = options.mtimes ? ` mtime=${st.mtimeMs}` : '';
      if (st.isDirectory()) {
        out[rel] = `dir mode=${(st.mode & 0o7777).toString(8)}${mtime}`;
        await walk(p);
      } else if (st.isFile()) {
        let content = await fs.readFile(p);
        if (options.normalizeTimes) {
          content = Buffer.from(
            content.toString('latin1').replace(/"migrated_at": "[^"]*"/g, '"migrated_at": "T"'),
            'latin1',
          );
        }
        const hash = createHash('sha256').update(content).digest('hex');
        out[rel] = `file mode=${(st.mode & 0o7777).toString(8)} size=${st.size} sha256=${hash}${mtime}`;
      } else {
        out[rel] = `other${mtime}`;
      }
    }
  };
  const rootStat = await fs.lstat(root);
  out['.'] = options.mtimes ? `root mtime=${rootStat.mtimeMs}` : 'root';
  await walk(root);
  return out;
}

export async function readJson(file: string): Promise<unknown> {
  return JSON.parse(await fs.readFile(file, 'utf8')) as unknown;
}

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}
