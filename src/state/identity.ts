/** Who runs tend and on which machine: recorded on sessions and local environments. */
import { readFileSync } from 'node:fs';
import os from 'node:os';

let cached: { user: string; hostId: string } | undefined;

export function localIdentity(): { user: string; hostId: string } {
  if (cached) return cached;
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    user = process.env.USER ?? 'unknown';
  }
  let hostId = os.hostname();
  try {
    // A stable machine id tells two hosts with the same name apart.
    const machineId = readFileSync('/etc/machine-id', 'utf8').trim();
    if (machineId) hostId = `${os.hostname()}-${machineId.slice(0, 12)}`;
  } catch {
    // hostname alone
  }
  cached = { user: user || 'unknown', hostId };
  return cached;
}
