/**
 * What the file store's locks need from the data dir, checked when a store first uses it. The locks rest on the
 * filesystem alone (pipeline-lock.ts), so the data dir must be:
 *  - writable by its owner only: whoever can write it can take, remove or fake a lock; and so must every folder above
 *    it, up to `/` (whoever can write a parent can rename the data dir away and put another in its place), unless
 *    that folder has the sticky bit (as /tmp): none of them a symlink, each owned by this user or root;
 *  - on a local filesystem of this machine: on NFS, SMB or FUSE an mkdir lock's heartbeat is judged against another
 *    host's clock and an attribute cache, kernel facts about a holder's pid mean nothing across hosts, and a live lock
 *    can look stale. Several hosts share the PostgreSQL store instead.
 * The PostgreSQL store's media dir (EPISODES_MEDIA_DIR) holds the episodes' files, so it gets the same owner and
 * permission checks (`checkPrivateDirPath`), but may be a shared mount.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PipelineError, ErrorType } from '../domain/errors';

/** statfs f_type magic numbers (linux/magic.h and the filesystems' own headers) of shared or userspace filesystems. */
const NOT_LOCAL: ReadonlyMap<number, string> = new Map([
  [0x6969, 'NFS'],
  [0x517b, 'SMB'],
  [0xfe534d42, 'SMB2'],
  [0xff534d42, 'CIFS'],
  // virtiofs (a VM's shared folder) reports FUSE's type.
  [0x65735546, 'FUSE'],
  [0x786f4256, 'vboxsf (VirtualBox shared folder)'],
  [0x01021997, '9P'],
  [0x00c36400, 'Ceph'],
  [0x5346414f, 'AFS'],
  [0x6b414653, 'AFS (kAFS)'],
  [0x73757245, 'Coda'],
  [0x564c, 'NCP'],
  [0x7461636f, 'OCFS2'],
  [0x01161970, 'GFS2'],
  [0x0bd00bd0, 'Lustre'],
  [0x47504653, 'GPFS'],
  [0x13661366, 'OrangeFS'],
]);

export type StatFs = (dir: string) => Promise<{ type: number }>;

/** Refuses a data dir that others can write or that lives on a shared filesystem; one line naming the reason. */
export async function checkDataDir(dataDir: string, statfs: StatFs = (d) => fs.promises.statfs(d)): Promise<void> {
  const { mode } = fs.statSync(dataDir);
  if ((mode & 0o022) !== 0) {
    const octal = (mode & 0o7777).toString(8).padStart(4, '0');
    throw new PipelineError(
      ErrorType.StorageFailure,
      `data dir ${dataDir} has mode ${octal}: group or others can write it, and so take or remove its locks; ` +
        `refusing to use it (chmod go-w ${dataDir})`,
      { file: dataDir },
    );
  }
  checkPrivateDirPath(dataDir, 'data dir');
  const kind = NOT_LOCAL.get((await statfs(dataDir)).type);
  if (kind) {
    throw new PipelineError(
      ErrorType.StorageFailure,
      `data dir ${dataDir} is on ${kind}, where the file store's locks cannot hold; use a local disk, or ` +
        'PostgreSQL (EPISODES_STORE_URL) as the store for several hosts',
      { file: dataDir },
    );
  }
}

/**
 * Refuses `dir`, or a folder above it up to `/`, that is a symlink, is owned by neither this user nor root, or that
 * group or others may write without the sticky bit; one line naming the folder and the command that fixes it. Folders
 * not made yet are skipped (their parents decide who could make them).
 */
export function checkPrivateDirPath(dir: string, what: string, type: ErrorType = ErrorType.StorageFailure): void {
  const uid = process.geteuid?.();
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const st = fs.lstatSync(d, { throwIfNoEntry: false });
    const refuse = (problem: string) =>
      new PipelineError(type, `${what} ${dir}: ${d} ${problem}; refusing to use it`, { file: d });
    if (st?.isSymbolicLink()) throw refuse(`is a symlink (give the real path: ${fs.realpathSync(d)})`);
    if (st && uid !== undefined && st.uid !== uid && st.uid !== 0)
      throw refuse(`is owned by uid ${st.uid} (chown ${uid} ${d})`);
    if (st && (st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0) {
      throw refuse(`may be written by group or others (chmod go-w ${d})`);
    }
    if (path.dirname(d) === d) return;
  }
}
