/** Facts about the machine a run was taken on, recorded next to its numbers. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';

export const machineSchema = z.strictObject({
  hostname: z.string(),
  cpu_model: z.string(),
  cores: z.number().int().positive(),
  memory_mib: z.number().positive(),
  node: z.string(),
  os: z.string(),
  load_avg_start: z.array(z.number()),
  load_avg_end: z.array(z.number()),
  disk: z.strictObject({
    path: z.string(),
    device: z.string(),
    fs_type: z.string(),
    mount_options: z.string(),
    rotational: z.boolean().nullable(),
    model: z.string().nullable(),
  }),
});
export type Machine = z.infer<typeof machineSchema>;

export function machineFacts(dataPath: string, loadAvgStart: number[]): Machine {
  const cpus = os.cpus();
  return {
    hostname: os.hostname(),
    cpu_model: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memory_mib: Math.round(os.totalmem() / 2 ** 20),
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    load_avg_start: loadAvgStart.map(round2),
    load_avg_end: os.loadavg().map(round2),
    disk: diskFacts(dataPath),
  };
}

function diskFacts(dataPath: string): Machine['disk'] {
  const resolved = path.resolve(dataPath);
  let best = { device: 'unknown', mount: '/', fsType: 'unknown', options: '' };
  for (const line of readOr('/proc/mounts', '').split('\n')) {
    const [device, mount, fsType, options] = line.split(' ');
    if (!device || !mount || !fsType || options === undefined) continue;
    const inside = resolved === mount || resolved.startsWith(mount.endsWith('/') ? mount : `${mount}/`);
    if (inside && mount.length >= best.mount.length) best = { device, mount, fsType, options };
  }
  // /dev/vda1 -> vda, /dev/nvme0n1p2 -> nvme0n1: the block device whose queue describes the disk.
  const base = path.basename(best.device);
  const block = /^nvme\d+n\d+/.exec(base)?.[0] ?? base.replace(/\d+$/, '');
  const rotational = readOr(`/sys/block/${block}/queue/rotational`, '').trim();
  const model = readOr(`/sys/block/${block}/device/model`, '').trim() || virtioNote(block);
  return {
    path: `${resolved} (mounted at ${best.mount})`,
    device: best.device,
    fs_type: best.fsType,
    mount_options: best.options,
    rotational: rotational === '' ? null : rotational === '1',
    model: model || null,
  };
}

function virtioNote(block: string): string {
  return block.startsWith('vd') ? 'virtio block device (virtual machine)' : '';
}

function readOr(file: string, fallback: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

export function gitFacts(repoRoot: string): { commit: string; dirty: boolean } {
  const git = (args: string[]): string => {
    try {
      return execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      return '';
    }
  };
  return {
    commit: git(['rev-parse', 'HEAD']).trim() || 'unknown',
    dirty: git(['status', '--porcelain']).trim() !== '',
  };
}
