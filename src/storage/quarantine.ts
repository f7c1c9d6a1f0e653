import { QUARANTINE_REASONS_MAX } from '../contract/index.js';
import type { QuarantineInfo } from './types.js';

/**
 * Why one run is quarantined. A drifted completed run is quarantined once per problem, and its
 * documents can name thousands of paths, so a repeated reason is found in a set (never by scanning
 * the list) and only the first QUARANTINE_REASONS_MAX distinct reasons are kept; the rest are
 * counted, as they arrive, in one last line. What is kept never grows with the run's documents.
 */
export class QuarantineReasons {
  readonly info: QuarantineInfo = { reasons: [], since: new Date().toISOString() };
  private readonly kept = new Set<string>();
  private notKept = 0;

  /** 'kept' (a new reason listed), 'repeat' (already listed) or 'counted' (past the cap). */
  add(text: string): 'kept' | 'repeat' | 'counted' {
    const reason = withoutAbsolutePaths(text);
    if (this.kept.has(reason)) return 'repeat';
    if (this.kept.size < QUARANTINE_REASONS_MAX) {
      this.kept.add(reason);
      this.info.reasons.push(reason);
      return 'kept';
    }
    this.notKept++;
    this.info.reasons[QUARANTINE_REASONS_MAX] =
      `${this.notKept} more reason${this.notKept === 1 ? '' : 's'} not kept`;
    return 'counted';
  }
}

/**
 * Reasons are shown by every read of the run (CONTRACT 3: no absolute path in a response). A
 * reason made from a file-system error carries the path Node quotes; only its last component is
 * kept, which still names the file.
 */
function withoutAbsolutePaths(reason: string): string {
  return reason.replace(/'\/[^']*'/g, (quoted) => `'${quoted.slice(1, -1).split('/').at(-1)}'`);
}
