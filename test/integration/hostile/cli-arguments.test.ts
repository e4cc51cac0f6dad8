/**
 * Hostile CLI arguments (fast-check): random ids, weeks, keys, instants, notes, steps and whole argument lists. Every
 * run ends with exit 0, 1 or 2; a failure is exactly one line on stderr naming a known ErrorType (or commander's usage
 * error); nothing is created outside the data dir; the store stays whole. Most cases run `main()` in-process (fast);
 * a sample runs the real binary.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { main } from '../../../src/cli';
import { ErrorType } from '../../../src/domain/errors';
import { CLI, snapshotTree } from '../../../testkit/legacy-harness';
import { collect } from '../../../testkit/processes';
import { assertAllocationInvariants, assertOnlyWholeStoreFiles } from '../../../testkit/store-files';
import { hostileString, nearValid, pathLike } from '../../../testkit/arbitraries';

const KNOWN_TYPES: readonly string[] = Object.values(ErrorType);
const USAGE_TYPES: readonly string[] = [ErrorType.InvalidInput, ErrorType.InvalidAllocationRequest];

/** Commands that would reach Temporal, a vendor or another store before any check: not fuzzed here. */
const REACHES_OUT = ['run', 'schedule', 'vendor-sim', 'store', 'migrate', 'migrate-legacy'];

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Sends everything written to `stream` into `sink` until the returned function restores it. */
function capture(stream: NodeJS.WriteStream, sink: string[]): () => void {
  const own = Object.getOwnPropertyDescriptor(stream, 'write');
  stream.write = (chunk: string | Uint8Array) => sink.push(String(chunk)) > 0;
  return () => {
    if (own) Object.defineProperty(stream, 'write', own);
    else Reflect.deleteProperty(stream, 'write'); // back to the prototype's
  };
}

/** `main(argv)` with stdout/stderr captured (commander writes to process.stderr directly). */
async function runInProcess(argv: string[]): Promise<Outcome> {
  const out: string[] = [];
  const err: string[] = [];
  const restore = [capture(process.stdout, out), capture(process.stderr, err)];
  try {
    const code = await main(argv);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    for (const r of restore) r();
  }
}

/** The real binary, with the working directory inside the watched tree (a relative escape would show there). */
async function runBinary(argv: string[], cwd: string): Promise<Outcome> {
  const child = spawn(process.execPath, [CLI, ...argv], {
    cwd,
    env: {
      ...process.env,
      EPISODES_FAILPOINTS: '',
      EPISODES_STORE_URL: '',
      EPISODES_DATA_DIR: '',
      EPISODES_VENDOR_API_KEY: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const r = await collect(child);
  return { code: r.code ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** The contract of every run, whatever the arguments. Returns what kind of outcome it was, for the coverage check. */
function assertWellBehaved(argv: string[], r: Outcome): string {
  const what = `${JSON.stringify(argv).slice(0, 300)} → ${r.code}: ${r.stderr.slice(0, 300)}`;
  assert.ok([0, 1, 2].includes(r.code), what);
  if (r.code === 0) return 'ok';
  if (r.stderr.startsWith('Usage: episodes')) {
    // No command at all: commander prints the help (on stderr) instead of an error line.
    assert.equal(r.code, 2, what);
    return 'help';
  }
  const lines = r.stderr.split('\n').filter((l) => l.length > 0);
  assert.equal(lines.length, 1, `one line on stderr: ${what}`);
  const typed = /^episodes: ([A-Za-z]+): /.exec(lines[0]!);
  if (typed) {
    assert.ok(KNOWN_TYPES.includes(typed[1]!), `unknown error type: ${what}`);
    assert.equal(r.code, USAGE_TYPES.includes(typed[1]!) ? 2 : 1, what);
    return typed[1]!;
  }
  // Commander's own usage errors (unknown option, missing argument, ...): always exit 2.
  assert.match(lines[0]!, /^error: /, `an error without a known type: ${what}`);
  assert.equal(r.code, 2, what);
  return 'usage';
}

/** Runs `n` cases and checks that the generators reached each kind of outcome (not n times the same early refusal). */
async function fuzz(
  arbitrary: fc.Arbitrary<string[]>,
  n: number,
  run: (argv: string[]) => Promise<Outcome>,
  kinds: string[],
  examples: string[][] = [],
) {
  const seen = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(arbitrary, async (argv) => {
      const kind = assertWellBehaved(argv, await run(argv));
      seen.set(kind, (seen.get(kind) ?? 0) + 1);
    }),
    { numRuns: n, examples: examples.map((argv) => [argv]) },
  );
  for (const k of kinds) assert.ok((seen.get(k) ?? 0) > 0, `no ${k} outcome in ${JSON.stringify([...seen])}`);
}

const ids = fc.oneof(hostileString, nearValid(['2026-W32-0', '2026-W32-1', '2026-W33-0']));
const weeks = fc.oneof(hostileString, nearValid(['2026-W32', '2020-W53']), fc.constantFrom('2026-W32', '2026-W33'));
const keys = fc.oneof(
  hostileString,
  fc.constantFrom('run-a', 'run-b', 'weekly-media-2026-08-03T09:00:00Z', '', ' ', 'a\nb', '\u0007', 'k'.repeat(257)),
);
const text = fc.oneof(hostileString, fc.string({ unit: 'grapheme', maxLength: 4100 }));
const noNul = (argv: string[]) => !argv.some((a) => a.includes('\0'));

/** Found by this test: commander quoted an unknown option verbatim, newline and terminal escapes included. */
function trickyExamples(dir: string): string[][] {
  return [
    ['--data-dir', dir, 'reconcile', '-\n', '--step', '2026-W32', '--remote-job', '2026-W32'],
    ['--data-dir', dir, 'show', '--\u001b[2J\u001b[31mforged\nepisodes: ok'],
  ];
}

/** Argument lists for the data dir `d` (episodes may exist) and `empty` (no episode: paid commands stop at the guard). */
function argvs(d: string, empty: string): fc.Arbitrary<string[]> {
  const on = (dir: string, ...rest: string[]) => ['--data-dir', dir, ...rest];
  return fc.oneof(
    ids.map((s) => on(d, 'show', s, '--json')),
    weeks.map((w) => on(d, 'list', '--week', w)),
    fc.tuple(keys, weeks).map(([k, w]) => on(d, 'plan', '--key', k, '--week', w, '--json')),
    fc
      .tuple(keys, fc.oneof(hostileString, nearValid(['2026-08-03T09:00:00Z'])), fc.oneof(hostileString, pathLike))
      .map(([k, at, tz]) => on(d, 'plan', '--key', k, '--at', at, '--timezone', tz)),
    fc.tuple(ids, text).map(([s, n]) => on(empty, 'rework', s, '--notes', n)),
    fc.tuple(ids, text).map(([s, b]) => on(empty, 'approve', s, '--by', b)),
    fc
      .tuple(ids, hostileString, hostileString)
      .map(([s, st, j]) => on(empty, 'reconcile', s, '--step', st, '--remote-job', j)),
    fc.tuple(ids, hostileString).map(([s, t]) => on(empty, 'generate', s, '--approval-timeout', t)),
    ids.map((s) => on(empty, 'status', s)),
    ids.map((s) => on(empty, 'reassemble', s)),
    fc.array(ids, { maxLength: 3 }).map((s) => on(d, 'verify', ...s)),
    weeks.map((w) => on(d, 'ledger', '--no-vendor', '--week', w)),
    // Whatever else: random words, options and commands (minus the ones that reach out, and minus a second data dir).
    fc
      .array(fc.oneof(hostileString, fc.constantFrom('plan', 'show', 'list', 'rework', '--json', '--key', '--week')), {
        maxLength: 6,
      })
      .filter(
        (rest) =>
          !rest.some((a) => REACHES_OUT.includes(a) || a.startsWith('--data-dir') || a.startsWith('--store-url')),
      )
      .map((rest) => on(empty, ...rest)),
  );
}

describe('hostile input: CLI arguments (fast-check)', function () {
  this.timeout(300_000);
  let top: string;
  let dataDir: string;
  let empty: string;
  let cwd: string;
  beforeEach(async () => {
    // Data dirs two levels down, the working directory beside them: `..` escapes of any depth up to two land in `top`.
    top = await fs.mkdtemp(path.join(os.tmpdir(), 'cli-hostile-'));
    dataDir = path.join(top, 'a', 'b', 'data');
    empty = path.join(top, 'a', 'b', 'empty');
    cwd = path.join(top, 'a', 'b', 'cwd');
    for (const d of [dataDir, empty, cwd]) await fs.mkdir(d, { recursive: true });
    for (const key of ['run-a', 'run-b']) {
      const r = await runInProcess(['--data-dir', dataDir, 'plan', '--key', key, '--week', '2026-W32']);
      assert.equal(r.code, 0, r.stderr);
    }
  });
  afterEach(async () => {
    await fs.rm(top, { recursive: true, force: true });
  });

  /** Everything in `top` except the data dir's own content, which allocations may legitimately change. */
  async function outsideDataDir(): Promise<Record<string, string>> {
    const tree = await snapshotTree(top, { mtimes: true });
    const mine = path.join('a', 'b', 'data');
    return Object.fromEntries(Object.entries(tree).filter(([rel]) => rel !== mine && !rel.startsWith(mine + path.sep)));
  }

  it('in-process: 400 random argument lists; exit 0/1/2, one typed line, nothing outside the data dir', async () => {
    const before = await outsideDataDir();
    const home = process.cwd();
    process.chdir(cwd);
    try {
      await fuzz(
        argvs(dataDir, empty),
        400,
        runInProcess,
        ['ok', 'usage', ErrorType.InvalidInput, ErrorType.InvalidAllocationRequest, ErrorType.EpisodeNotFound],
        trickyExamples(empty),
      );
    } finally {
      process.chdir(home);
    }
    // `top`'s own mtime changes only if something was created beside `a/`; likewise for every directory listed.
    assert.deepEqual(await outsideDataDir(), before, 'something was created or changed outside the data dir');
    await assertOnlyWholeStoreFiles(dataDir);
    const episodes = await assertAllocationInvariants(dataDir);
    assert.ok(episodes.length >= 2);
  });

  it('the real binary: 40 random argument lists, same contract', async () => {
    const before = await outsideDataDir();
    await fuzz(
      argvs(dataDir, empty).filter(noNul),
      40,
      (argv) => runBinary(argv, cwd),
      ['usage', ErrorType.InvalidInput],
      trickyExamples(empty),
    );
    assert.deepEqual(await outsideDataDir(), before, 'something was created or changed outside the data dir');
    await assertOnlyWholeStoreFiles(dataDir);
    await assertAllocationInvariants(dataDir);
  });
});
