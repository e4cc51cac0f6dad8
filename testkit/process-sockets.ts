/** The sockets a process listens on, read from /proc: what another local process could connect to. */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Inodes of the sockets among the process's fds. */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const m = /^socket:\[(\d+)\]$/.exec(safe(() => readlinkSync(`/proc/${pid}/fd/${fd}`)) ?? '');
    if (m) inodes.add(m[1]!);
  }
  return inodes;
}

export function safe<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}

/** Addresses the holder listens on: unix paths (abstract ones as `\0name`) and TCP ports. */
export function listeningAddresses(pid: number): (string | number)[] {
  const mine = socketInodes(pid);
  const found: (string | number)[] = [];
  for (const line of readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)) {
    const [, , , flags, , state, inode, name] = line.trim().split(/\s+/);
    // __SO_ACCEPTCON (0x10000) and TCP_LISTEN-like state 01: a listening socket.
    if (inode && mine.has(inode) && name && (parseInt(flags ?? '0', 16) & 0x10000) !== 0 && state === '01') {
      // An abstract name shows as @name, padded with @ for the NULs Node binds it with (and connects with too).
      found.push(name.startsWith('@') ? `\0${name.slice(1).replace(/@+$/, '')}` : name);
    }
  }
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of (safe(() => readFileSync(table, 'utf8')) ?? '').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && mine.has(f[9] ?? '')) found.push(parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return found;
}
