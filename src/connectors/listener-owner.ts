import { readFile } from 'node:fs/promises';

/** TCP_LISTEN in the kernel's socket tables. */
const LISTEN = '0A';

/**
 * The users that own a socket listening on TCP `port` in this network namespace, read from the
 * kernel's socket tables (`/proc/net/tcp` and `/proc/net/tcp6`, readable by every user). The
 * owner is the uid that opened the socket, as the kernel recorded it: nothing the listening
 * process says about itself. Null when neither table can be read (not Linux).
 *
 * A line: `sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...`,
 * the local port in hexadecimal after the address's last colon.
 */
export async function listenerUids(port: number): Promise<number[] | null> {
  const tables = await Promise.all(
    ['/proc/net/tcp', '/proc/net/tcp6'].map((path) => readFile(path, 'utf8').catch(() => null)),
  );
  if (tables.every((table) => table === null)) return null;
  const uids = new Set<number>();
  for (const table of tables) {
    for (const line of (table ?? '').split('\n').slice(1)) {
      const [, local, , state, , , , uid] = line.trim().split(/\s+/);
      if (local === undefined || uid === undefined || state !== LISTEN) continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) uids.add(Number(uid));
    }
  }
  return [...uids];
}
