/**
 * `npm run bench -- --smoke` end to end in a child process: it must finish and write a well-formed results file with
 * every row present, every number finite and positive, and every correctness check passed (sequences exactly 0..N-1
 * under contention, seeded stores read back, runs completed). Timings and targets are reported by the bench and never
 * asserted here.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, promises as fs, readdirSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { benchContention } from '../../bench/contention';
import { brokenRows, resultsSchema, type BenchResults } from '../../bench/results';
import { runNode } from '../../testkit/processes';

/** Rows every smoke run must produce, measured (PostgreSQL too: the suite already needs its throwaway server). */
function expectedRows(r: BenchResults): string[] {
  return [
    'allocation/floor',
    'allocation/floor-dirsync',
    'allocation/floor-protocol',
    ...r.config.sizes.flatMap((s) => [`allocation/file/${s}`, `allocation/postgres/${s}`]),
    'contention/file',
    'contention/file/alone',
    'temporal/latency/floor',
    'temporal/latency/weekly',
    'temporal/drain/1',
    'temporal/drain/2',
    'production/overhead',
    'production/memory',
    'production/worker-start',
    'production/parked',
    'review/waiting',
    'review/episode',
    'review/done',
  ];
}

// `npm run test:faults` and nightly only: the benchmark is CPU-heavy, and beside the suite it would slow every file.
const FULL = process.env.EPISODES_FAULTS === 'full';

if (FULL)
  describe('bench --smoke', function () {
    this.timeout(300_000);
    let out: string;
    let results: BenchResults;
    let stdout: string;

    before(async () => {
      out = mkdtempSync(path.join(os.tmpdir(), 'bench-smoke-'));
      const run = await runNode('bench/run.js', ['--smoke', '--out', out]);
      assert.equal(run.code, 0, `bench --smoke exited ${run.code}:\n${run.stderr.slice(-4000)}`);
      stdout = run.stdout;
      const files = readdirSync(out).filter((f) => f.endsWith('.json'));
      assert.equal(files.length, 1, `one results file in ${out}`);
      results = resultsSchema.parse(JSON.parse(readFileSync(path.join(out, files[0]!), 'utf8')));
    });
    after(() => fs.rm(out, { recursive: true, force: true }));

    it('writes a results file with machine facts and every row, each measured', () => {
      assert.equal(results.mode, 'smoke');
      assert.ok(results.machine.cores > 0 && results.machine.node.startsWith('v'));
      assert.ok(results.machine.disk.device.length > 0 && results.machine.disk.path.length > 0);
      const ids = results.rows.map((r) => r.id);
      assert.deepEqual([...ids].sort(), expectedRows(results).sort());
      const unmeasured = results.rows.filter((r) => r.status !== 'measured');
      assert.deepEqual(unmeasured, []);
    });

    it('reports finite positive numbers: latencies where latencies belong, rates where rates belong', () => {
      for (const row of results.rows) {
        if (row.status !== 'measured') continue;
        for (const [name, value] of Object.entries(row.metrics)) {
          assert.ok(Number.isFinite(value) && value > 0, `${row.id} ${name} = ${value}`);
        }
        const wants = row.id.startsWith('temporal/drain')
          ? ['runs_per_s']
          : row.id === 'production/memory'
            ? ['rss_idle_mib', 'rss_waiting_mib']
            : row.id === 'production/worker-start'
              ? ['sources_p50_ms', 'bundle_p50_ms']
              : row.id === 'production/parked'
                ? ['rss_before_mib', 'rss_after_mib', 'evicted_p50_ms', 'cached_p50_ms']
                : row.id.startsWith('contention/file')
                  ? ['p50_ms', 'p99_ms', 'allocs_per_s']
                  : ['p50_ms', 'p99_ms'];
        for (const name of wants) assert.ok(name in row.metrics, `${row.id} has ${name}`);
      }
      // Targets are computed (and reported as PASS or MISS), whatever they say.
      const file = results.rows.find((r) => r.id === `allocation/file/${results.config.sizes.at(-1)}`);
      assert.ok(file?.status === 'measured');
      assert.deepEqual(
        file.targets.map((t) => Number.isFinite(t.value) && t.pass === t.value <= t.limit),
        [true, true],
      );
    });

    it('passes every correctness check, including the contention sequences 0..N-1', () => {
      const contention = results.rows.find((r) => r.id === 'contention/file');
      assert.ok(contention?.status === 'measured');
      const total = results.config.contention_processes * results.config.contention_per_process;
      assert.deepEqual(
        contention.checks.map((c) => [c.name, c.pass]),
        [[`sequences exactly 0..${total - 1}, one episode per key, one key per episode`, true]],
      );
      for (const row of results.rows) {
        if (row.status !== 'measured') continue;
        for (const check of row.checks) assert.ok(check.pass, `${row.id}: ${check.name}: ${check.detail}`);
      }
    });

    it('fails its contention check, counted as broken, when the processes allocate without the pipeline lock', async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-nolock-'));
      try {
        const rows = await benchContention({
          processes: results.config.contention_processes,
          perProcess: results.config.contention_per_process,
          warmup: 0,
          rounds: 1,
          workDir: dir,
          unsafe: 'no-lock',
        });
        const row = rows.find((r) => r.id === 'contention/file');
        assert.ok(row?.status === 'measured' && row.checks.length === 1 && !row.checks[0]!.pass);
        assert.deepEqual(
          brokenRows(rows).map((r) => r.id),
          ['contention/file'],
        );
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    });

    it('prints the table and the profiles of the worst allocation ratio and of the weekly run', () => {
      assert.match(stdout, /\| section +\| row +\|/);
      assert.match(stdout, /profile of allocation\/file\//);
      assert.deepEqual(
        results.profiles.map((p) => p.row.split('/').slice(0, 2).join('/')),
        ['allocation/file', 'temporal/latency', 'temporal/latency'],
      );
      for (const p of results.profiles) assert.ok(Object.keys(p.parts_ms).length > 1, p.row);
    });
  });
