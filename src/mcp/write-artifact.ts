import { artifactPathProblems } from '../contract/index.js';
import { ArtifactError, readArtifact } from '../validators/artifact-root.js';
import type { ToolDefinition } from './context.js';
import { eventBody, postEventResult } from './event-tools.js';
import { failure, isSuccess, success } from './result.js';
import { confirmedRoot, fetchRunView } from './run-root.js';
import { ARTIFACT_WRITE_MAX_BYTES, WriteArtifactInput } from './schemas.js';
import { removeWrittenFile, WriteRefused, type WrittenFile, writeArtifactFile } from './write-file.js';

interface WriteArgs {
  runId: string;
  nodeId: string;
  path: string;
  content?: string;
  contentBase64?: string;
  artifactRoot?: string;
  emit?: boolean;
}

/** What a caller is told of a written file (its inode is the tool server's own business). */
const fileFields = ({ path, sha256, size }: WrittenFile) => ({ path, sha256, size });

/** The arguments that belong to the file, not to the artifact.written event. */
const FILE_ARGS = ['path', 'content', 'contentBase64', 'artifactRoot', 'emit'] as const;

export const writeArtifact: ToolDefinition = {
  name: 'harness.write_artifact',
  description:
    "Write an artifact file under the run's artifact root and have the bridge verify it: the path is relative (no '..', no leading /, no link at any component), the write is atomic (temp file + rename), then artifact.written is emitted for nodeId so the bridge hashes the file and records the claim, which is returned. path must be the node's configured artifact (see the run's nodes; e.g. prove -> proof/proof.json). With emit false a supporting file (rca/rca.json, run/packet.json, review/review.json, self_heal/pr.json) is written without an event. Refused on a completed or quarantined run.",
  inputSchema: WriteArtifactInput,
  async run(session, rawArgs) {
    const args = rawArgs as unknown as WriteArgs;
    if ((args.content === undefined) === (args.contentBase64 === undefined)) {
      return failure('invalid_tool_input', 'give exactly one of content and contentBase64');
    }
    const bytes =
      args.content !== undefined
        ? Buffer.from(args.content, 'utf8')
        : Buffer.from(args.contentBase64 ?? '', 'base64');
    if (bytes.length > ARTIFACT_WRITE_MAX_BYTES) {
      return failure('invalid_tool_input', `the content is larger than ${ARTIFACT_WRITE_MAX_BYTES} bytes`);
    }
    const pathProblems = artifactPathProblems(args.path);
    if (pathProblems.length > 0) {
      return failure('artifact_write_refused', 'the path breaks the artifact path rules', pathProblems);
    }
    const view = await fetchRunView(session, args.runId);
    if (!view.ok) return view.result;
    const run = view.value;
    if (run.status === 'completed' || run.status === 'quarantined') {
      // Rewriting a closed run's artifact is drift: it would quarantine a completed record.
      return failure(
        run.status === 'completed' ? 'run_closed' : 'run_quarantined',
        `the run is ${run.status}`,
      );
    }
    const emit = args.emit !== false;
    const configured = run.nodes.find((n) => n.id === args.nodeId)?.artifact ?? null;
    if (emit && configured !== args.path) {
      return failure('artifact_write_refused', `node ${args.nodeId} writes exactly ${configured}`, [
        `path ${args.path} is not the configured artifact of node ${args.nodeId} (${configured}); pass emit false to write a supporting file`,
      ]);
    }
    // A node's artifact is written only with the event that claims it: rewritten without one, a
    // verified artifact would drift from its claim.
    const owner = run.nodes.find((n) => n.artifact === args.path);
    if (!emit && owner) {
      return failure('artifact_write_refused', `${args.path} is the artifact of node ${owner.id}`, [
        `write it with emit true (nodeId ${owner.id}), so the bridge verifies and claims what is written`,
      ]);
    }
    const root = await confirmedRoot(session, args.runId, args.artifactRoot);
    if (!root.ok) return root.result;
    // The bytes in place now may be claimed already: kept, to be put back should the bridge not
    // take the new ones (a refused event, or a repeated event id whose claim stands).
    let previous: Buffer | null = null;
    if (emit) {
      try {
        previous = await readArtifact(root.value, args.path, ARTIFACT_WRITE_MAX_BYTES);
      } catch (err) {
        if (!(err instanceof ArtifactError)) throw err;
        if (err.message !== `${args.path} does not exist`)
          return failure('artifact_write_refused', `${args.path} was not written`, [err.message]);
      }
    }

    let written: WrittenFile;
    try {
      written = await writeArtifactFile(root.value, args.path, bytes);
    } catch (err) {
      if (err instanceof WriteRefused) {
        return failure('artifact_write_refused', `${args.path} was not written`, err.problems);
      }
      throw err;
    }
    if (!emit) {
      return success({ runId: args.runId, nodeId: args.nodeId, ...fileFields(written), emitted: false });
    }
    const rest = Object.fromEntries(
      Object.entries(rawArgs).filter(([k]) => !(FILE_ARGS as readonly string[]).includes(k)),
    );
    const { runId, event } = eventBody({
      actor: 'harness',
      message: `wrote ${args.path}`,
      ...rest,
    });
    const posted = await postEventResult(session, runId, {
      ...event,
      type: 'artifact.written',
      artifact: args.path,
      status: 'ok',
    });
    const duplicate = posted.res.body['duplicate'] === true;
    const stored = isSuccess(posted.res)
      ? (posted.res.body['event'] as { claim?: { sha256?: string } } | undefined)
      : undefined;
    const claim = stored?.claim;
    const taken = claim?.sha256 === written.sha256;
    // A refused event records no claim, and a repeated id no new one (its claim may be older than
    // the bytes in place, claimed since by another event): either way the file goes back to what it
    // was, so the call changes nothing. A file that was absent is removed again, unless the repeated
    // event's claim is of these very bytes (then they are its claimed artifact, back in place).
    const unrecorded = !isSuccess(posted.res) || duplicate;
    const putBack = unrecorded && previous !== null && !previous.equals(bytes);
    const removed = unrecorded && previous === null && !taken;
    if (putBack) await writeArtifactFile(root.value, args.path, previous as Buffer);
    if (removed) await removeWrittenFile(root.value, written);
    if (!isSuccess(posted.res)) return posted.result;
    if (!taken) {
      return failure(
        'artifact_claim_mismatch',
        duplicate
          ? `this event id was recorded before with other bytes${putBack ? '; the file was put back' : removed ? '; the file was removed' : ''}`
          : 'the bridge recorded other bytes than were written',
        [`${args.path}: wrote sha256 ${written.sha256}, the bridge recorded ${claim?.sha256 ?? 'no claim'}`],
      );
    }
    return success({
      runId,
      nodeId: args.nodeId,
      ...fileFields(written),
      emitted: true,
      claim,
      seq: posted.res.body['seq'],
      duplicate,
      ...(putBack ? { putBack: true } : {}),
      event: stored,
    });
  },
};
