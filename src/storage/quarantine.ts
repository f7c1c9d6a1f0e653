import { QUARANTINE_REASONS_MAX } from '../contract/index.js';
import type { QuarantineInfo } from './types.js';

/**
 * Why a run was quarantined, in a closed vocabulary (the reasons themselves are free text naming
 * files): a config, snapshot or journal that failed authentication when the run was listed or
 * opened, a journal page that failed it on a later read, a run directory no authentic config
 * attributes to the run, or a completed run's artifacts drifting.
 */
export type QuarantineKind = 'integrity' | 'journal_read' | 'orphan_directory' | 'drift';

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

/** The quarantined runs of a store, each with its reasons; each run reported once when it joins. */
export class Quarantines {
  private readonly runs = new Map<string, QuarantineReasons>();

  constructor(
    private readonly log: (msg: string) => void,
    private readonly onQuarantine?: (runId: string, kind: QuarantineKind) => void,
  ) {}

  /** Quarantines the run for `reason` (logged when it is new); its quarantine as it now stands. */
  add(runId: string, reason: string, kind: QuarantineKind): QuarantineInfo {
    let q = this.runs.get(runId);
    if (!q) {
      q = new QuarantineReasons();
      this.runs.set(runId, q);
      this.onQuarantine?.(runId, kind);
    }
    if (q.add(reason) === 'kept') this.log(`run ${runId} quarantined: ${reason}`);
    return q.info;
  }

  of(runId: string): QuarantineInfo | undefined {
    return this.runs.get(runId)?.info;
  }

  has(runId: string): boolean {
    return this.runs.has(runId);
  }
}
