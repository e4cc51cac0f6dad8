/**
 * Mocha reporter for profiling the suite: the spec reporter's output, plus the wall time of every test file (its
 * suites' hooks included) written as JSON lines to $EPISODES_FILE_TIMES when the run ends. Used by
 * scripts/test-profile.sh for the table in docs/testing.md; never by a normal run.
 */
import { appendFileSync } from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';

const { EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_TEST_FAIL, EVENT_TEST_PASS, EVENT_TEST_PENDING } =
  Mocha.Runner.constants;

interface FileTime {
  start: number;
  end: number;
  passed: number;
  failed: number;
  pending: number;
}

class FileTimesReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    const files = new Map<string, FileTime>();
    const entry = (file: string | undefined): FileTime | undefined => {
      if (!file) return undefined;
      const now = Date.now();
      let e = files.get(file);
      if (!e) files.set(file, (e = { start: now, end: now, passed: 0, failed: 0, pending: 0 }));
      e.end = now;
      return e;
    };
    runner.on(EVENT_SUITE_BEGIN, (s: Mocha.Suite) => entry(s.file));
    runner.on(EVENT_SUITE_END, (s: Mocha.Suite) => entry(s.file));
    runner.on(EVENT_TEST_PASS, (t: Mocha.Test) => entry(t.file) && entry(t.file)!.passed++);
    runner.on(EVENT_TEST_FAIL, (t: Mocha.Test) => entry(t.file) && entry(t.file)!.failed++);
    runner.on(EVENT_TEST_PENDING, (t: Mocha.Test) => entry(t.file) && entry(t.file)!.pending++);
    runner.once(EVENT_RUN_END, () => {
      const out = process.env.EPISODES_FILE_TIMES;
      if (!out) return;
      const root = path.resolve(__dirname, '..', '..');
      const lines = [...files].map(([file, t]) =>
        JSON.stringify({
          file: path.relative(root, file),
          seconds: (t.end - t.start) / 1000,
          passed: t.passed,
          failed: t.failed,
          pending: t.pending,
        }),
      );
      appendFileSync(out, lines.map((l) => `${l}\n`).join(''));
    });
  }
}

export = FileTimesReporter;
