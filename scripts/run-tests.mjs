#!/usr/bin/env node
// Runs compiled test files with `mocha --parallel`: each file in a worker process of its own lifetime's pool, so files
// that wait (on servers, timers, child processes) overlap instead of queueing. Files start longest first, from the
// per-file times in test/durations.json (a file not listed there is estimated by its folder), so that no long file
// starts last. See docs/testing.md.
//
//   node scripts/run-tests.mjs [--jobs N] [--ignore DIR]... [--profile OUT.jsonl [--save-durations]] [PATH...]
//                              [--write-docs] [--lint] [-- MOCHA_ARGS...]
//
// PATH: files or folders under dist/test (default: dist/test). --jobs: workers (default $EPISODES_TEST_JOBS or 4).
// --profile: every file's wall time, written to OUT.jsonl, and a table per folder printed at the end;
// --save-durations then writes those times to test/durations.json (the order of the next runs).
// --write-docs: after a passing run, the tables the files kept go into the docs (dist/testkit/write-parts.js); this is
// how `npm run test:faults -- --write-docs` writes the fault tables of docs/reliability.md.
// --lint: `npm run lint` beside the unit tier (each takes about one core); a failing lint stops the run there.
import { spawn, spawnSync } from 'node:child_process';
import console from 'node:console';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const DEFAULT_JOBS = 4;

function parseArgs(argv) {
  const o = { jobs: Number(process.env.EPISODES_TEST_JOBS) || DEFAULT_JOBS, ignore: [], paths: [], mocha: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      o.mocha = argv.slice(i + 1);
      break;
    } else if (a === '--jobs') o.jobs = Number(argv[++i]);
    else if (a === '--ignore') o.ignore.push(path.resolve(ROOT, argv[++i]));
    else if (a === '--profile') o.profile = path.resolve(argv[++i]);
    else if (a === '--save-durations') o.saveDurations = true;
    else if (a === '--write-docs') o.writeDocs = true;
    else if (a === '--lint') o.lint = true;
    else o.paths.push(path.resolve(ROOT, a));
  }
  if (!Number.isInteger(o.jobs) || o.jobs < 1) throw new Error(`--jobs must be a positive integer`);
  if (o.paths.length === 0) o.paths.push(path.join(DIST, 'test'));
  return o;
}

function testFiles(p, ignore) {
  if (ignore.some((i) => p === i || p.startsWith(i + path.sep))) return [];
  if (!existsSync(p)) throw new Error(`no such test path: ${path.relative(ROOT, p)} (run npm run build first?)`);
  if (statSync(p).isFile()) return [p];
  return readdirSync(p)
    .sort()
    .flatMap((name) => {
      const child = path.join(p, name);
      return statSync(child).isDirectory() || name.endsWith('.test.js') ? testFiles(child, ignore) : [];
    });
}

/** Seconds per file (key: path under dist/, e.g. test/integration/store/file-store.test.js), from the last profile. */
function estimates(files) {
  const durations = path.join(ROOT, 'test', 'durations.json');
  const known = existsSync(durations) ? JSON.parse(readFileSync(durations, 'utf8')) : {};
  const byFolder = new Map();
  for (const [file, s] of Object.entries(known)) {
    const folder = path.dirname(file);
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), s]);
  }
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const overall = byFolder.size ? mean(Object.values(known)) : 10;
  return new Map(
    files.map((f) => {
      const key = path.relative(DIST, f);
      const folder = byFolder.get(path.dirname(key));
      return [f, known[key] ?? (folder ? mean(folder) : overall)];
    }),
  );
}

function readProfile(out) {
  return readFileSync(out, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** This run's times over the saved ones; a file that no longer exists is dropped. */
function saveDurations(rows) {
  const saved = path.join(ROOT, 'test', 'durations.json');
  const known = existsSync(saved) ? JSON.parse(readFileSync(saved, 'utf8')) : {};
  for (const r of rows) known[r.file] = Math.round(r.seconds * 10) / 10;
  const durations = Object.fromEntries(
    Object.entries(known)
      .filter(([file]) => existsSync(path.join(DIST, file)))
      .sort(([a], [b]) => a.localeCompare(b)),
  );
  writeFileSync(path.join(ROOT, 'test', 'durations.json'), `${JSON.stringify(durations, null, 2)}\n`);
}

function printProfile(rows, out, wallSeconds) {
  const folders = new Map();
  for (const r of rows) {
    const f = path.dirname(r.file);
    const e = folders.get(f) ?? { files: 0, seconds: 0 };
    folders.set(f, { files: e.files + 1, seconds: e.seconds + r.seconds });
  }
  console.log(`\nprofile (${out}): wall ${wallSeconds.toFixed(0)} s; per folder, the sum of its files' wall times`);
  for (const [f, e] of [...folders].sort((a, b) => b[1].seconds - a[1].seconds)) {
    console.log(`  ${f.padEnd(28)} ${String(e.files).padStart(3)} files ${e.seconds.toFixed(1).padStart(8)} s`);
  }
  console.log('slowest files:');
  for (const r of rows.sort((a, b) => b.seconds - a.seconds).slice(0, 15)) {
    console.log(`  ${r.file.padEnd(52)} ${r.seconds.toFixed(1).padStart(8)} s`);
  }
}

/** A directory for the files' table rows, with how and when this run started (named in each table's caption). */
function startDocTableParts() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'doc-table-parts-'));
  const script = process.env.npm_lifecycle_event;
  const args = process.argv.slice(2).filter((a) => !a.startsWith('dist/') || !script);
  const command = script
    ? `npm run ${script} -- ${args.join(' ')}`
    : `${process.env.EPISODES_FAULTS ? `EPISODES_FAULTS=${process.env.EPISODES_FAULTS} ` : ''}node scripts/run-tests.mjs ${args.join(' ')}`;
  const run = { command, started_at: new Date().toISOString(), load_start: os.loadavg() };
  writeFileSync(path.join(dir, 'run.json'), JSON.stringify(run));
  return dir;
}

function writeDocTables(dir, status) {
  if (status === 0) {
    const w = spawnSync(process.execPath, [path.join(DIST, 'testkit', 'write-parts.js'), dir], {
      stdio: 'inherit',
    });
    if (w.status !== 0) process.exitCode = 1;
  } else console.log('--write-docs: the run failed, so no doc table was written');
  rmSync(dir, { recursive: true, force: true });
}

/** Every file of this run must have a time in test/durations.json: a new file would otherwise start whenever. */
function missingDurations(files) {
  const durations = path.join(ROOT, 'test', 'durations.json');
  const known = existsSync(durations) ? JSON.parse(readFileSync(durations, 'utf8')) : {};
  return files.map((f) => path.relative(DIST, f)).filter((key) => !(key in known));
}

/** Starts `npm run lint` with its output in a file; the returned function waits for it, prints it, gives its status. */
function startLint() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lint-'));
  const fd = openSync(path.join(dir, 'lint.log'), 'w');
  const child = spawn('npm', ['run', 'lint'], { cwd: ROOT, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  return async () => {
    const code = await exited;
    process.stdout.write(readFileSync(path.join(dir, 'lint.log'), 'utf8'));
    rmSync(dir, { recursive: true, force: true });
    return code;
  };
}

/** One mocha run over `files`; the unit tier's files run with the guard that refuses sockets and processes. */
function runMocha(files, jobs, extra, env) {
  const mocha = path.join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
  const args = jobs > 1 ? ['--parallel', '--jobs', String(jobs)] : [];
  return spawnSync(process.execPath, [mocha, ...args, ...extra, ...o.mocha, ...files], { stdio: 'inherit', env })
    .status;
}

const o = parseArgs(process.argv.slice(2));
const files = o.paths.flatMap((p) => testFiles(p, o.ignore));
const missing = missingDurations(files);
if (missing.length > 0 && !o.saveDurations) {
  console.error(`run-tests: test/durations.json has no time for ${missing.join(', ')}`);
  console.error(
    '  measure them: npm run build && node scripts/run-tests.mjs --profile OUT.jsonl --save-durations PATH...',
  );
  process.exit(1);
}
const estimate = estimates(files);
files.sort((a, b) => estimate.get(b) - estimate.get(a));
const UNIT = path.join(DIST, 'test', 'unit') + path.sep;
const unit = files.filter((f) => f.startsWith(UNIT));
const rest = files.filter((f) => !f.startsWith(UNIT));
const jobs = Math.min(o.jobs, Math.max(1, rest.length));
console.log(
  `run-tests: ${unit.length} unit files, then ${rest.length} files on ${jobs} workers, node ${process.version}`,
);
if (o.profile) writeFileSync(o.profile, '');
const started = Date.now();
const env = { ...process.env, ...(o.profile ? { EPISODES_FILE_TIMES: o.profile } : {}) };
if (o.writeDocs) env.EPISODES_DOC_TABLE_PARTS = startDocTableParts();
const guard = ['--require', path.join(DIST, 'testkit', 'unit-guard.js')];
const statuses = [];
const lint = o.lint ? startLint() : undefined;
// Serial: mocha loads a --require in its own process too, and a parallel run forks its workers.
if (unit.length > 0) statuses.push(runMocha(unit, 1, guard, env));
const linted = lint ? await lint() : 0;
statuses.push(linted);
if (rest.length > 0 && linted === 0) statuses.push(runMocha(rest, jobs, [], env));
const status = statuses.find((s) => s !== 0) ?? 0;
if (o.writeDocs) writeDocTables(env.EPISODES_DOC_TABLE_PARTS, status);
if (o.profile && existsSync(o.profile)) {
  printProfile(readProfile(o.profile), o.profile, (Date.now() - started) / 1000);
  if (o.saveDurations && status === 0) saveDurations(readProfile(o.profile));
}
process.exit(status === 0 ? (process.exitCode ?? 0) : (status ?? 1));
