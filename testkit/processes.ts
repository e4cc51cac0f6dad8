import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';

export const DIST_ROOT = path.resolve(__dirname, '..');

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `node <dist-relative script> ...args` and collects its output. */
export function runNode(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<ProcessResult> {
  return collect(spawnNode(script, args, env));
}

const live = new Set<ChildProcess>();

export function spawnNode(script: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(process.execPath, [path.join(DIST_ROOT, script), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.on('exit', () => live.delete(child));
  return child;
}

/** A test that fails before its failpoint fires must not leave a worker behind: the root hook calls this. */
export function killLeftoverProcesses(): void {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
}

process.on('exit', killLeftoverProcesses);

export function collect(child: ChildProcess): Promise<ProcessResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** The `episodes` CLI as an operator runs it. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ProcessResult> {
  return runNode('src/cli.js', args, env);
}

/**
 * Stops `child` (SIGSTOP) as soon as it announces the delay of failpoint `point` on stderr (src/failpoints.ts): the
 * process is then frozen at that moment, timers and heartbeats included, until it gets SIGCONT.
 */
export function freezeAtFailpoint(child: ChildProcess, point: string): Promise<void> {
  let seen = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      seen += d.toString();
      if (!seen.includes(`failpoint ${point}: delay`)) return;
      child.kill('SIGSTOP');
      child.stderr?.off('data', onData);
      resolve();
    };
    child.stderr?.on('data', onData);
    child.once('exit', (code, signal) => reject(new Error(`exited (${code ?? signal}) before ${point}: ${seen}`)));
  });
}
