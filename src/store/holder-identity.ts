/**
 * Who holds a file store lock, in terms the kernel can check. The holder's entry in the lock directory names its pid,
 * the pid's start time (/proc/<pid>/stat field 22), the pid namespace and the boot id. A waiter on the same boot and in
 * the same pid namespace can then prove the holder dead: its pid is gone, is a zombie, or belongs to a process started
 * at another time (a reused pid). Anything else (another boot, another container, another OS, an entry it cannot read)
 * proves nothing, and only the lock's stale heartbeat counts. Nothing a peer says is ever part of the proof.
 */
import { readFileSync, readlinkSync } from 'node:fs';

interface HolderFacts {
  pid: number;
  startTime: string;
  pidNs: string;
  bootId: string;
}

const PREFIX = 'holder-';
const ENTRY = /^holder-(\d+)-(\d+)-(\d+)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** Any holder entry, of this version or another (an older one without facts included): removed with the lock. */
export function isHolderEntry(name: string): boolean {
  return name.startsWith(PREFIX);
}

/** The entry this process holds locks under. */
export function ownHolderEntry(): string {
  const me = ownFacts();
  return me ? `${PREFIX}${me.pid}-${me.startTime}-${me.pidNs}-${me.bootId}` : `${PREFIX}${process.pid}-unknown`;
}

/** True only when the kernel shows that the process named by `entry` no longer runs (see the header). */
export function holderProvenDead(entry: string): boolean {
  const m = ENTRY.exec(entry);
  const me = ownFacts();
  if (!m || !me || m[3] !== me.pidNs || m[4] !== me.bootId) return false;
  const stat = procStat(Number(m[1]));
  if (stat === 'gone') return true;
  return stat !== undefined && (stat.state === 'Z' || stat.startTime !== m[2]);
}

let own: HolderFacts | undefined | null = null;

function ownFacts(): HolderFacts | undefined {
  if (own === null) own = readOwnFacts();
  return own;
}

function readOwnFacts(): HolderFacts | undefined {
  try {
    // /proc must be this process's pid namespace's, or its pids mean something else.
    if (readlinkSync('/proc/self') !== String(process.pid)) return undefined;
    const pidNs = /^pid:\[(\d+)\]$/.exec(readlinkSync('/proc/self/ns/pid'))?.[1];
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const stat = procStat(process.pid);
    if (!pidNs || typeof stat !== 'object') return undefined;
    const facts = { pid: process.pid, startTime: stat.startTime, pidNs, bootId };
    return ENTRY.test(`${PREFIX}${facts.pid}-${facts.startTime}-${facts.pidNs}-${facts.bootId}`) ? facts : undefined;
  } catch {
    return undefined; // not Linux, or no /proc: no proofs, stale heartbeats only
  }
}

/** The state (field 3) and start time (field 22) of a pid; 'gone' if it does not exist, undefined if unreadable. */
function procStat(pid: number): { state: string; startTime: string } | 'gone' | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (e) {
    // ESRCH: the process exited while the file was read.
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ESRCH' ? 'gone' : undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const [state, startTime] = [fields[0], fields[19]];
  return state && startTime && /^\d+$/.test(startTime) ? { state, startTime } : undefined;
}
