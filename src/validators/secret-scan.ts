import { createHash } from 'node:crypto';
import { lintSource, recommendedRules } from '#secretlint';
import {
  SECRETS_ALLOWED_PATH,
  SECRETS_ALLOWED_SCHEMA_ID,
  type SecretsAllowed,
} from '../contract/artifacts/index.js';
import { documentRefsHere } from '../workers/document-refs.js';
import { ArtifactError, readArtifact } from './artifact-root.js';
import { loadDocument, REFERENCED_DOCUMENTS } from './documents.js';
import type { FinishLineEnv, RunFacts } from './facts.js';
import type { InputsOf } from './inputs.js';
import { HARNESS_SECRET_RULES } from './secret-rules.js';
import { unverifiedRead } from './verified-bytes.js';

/**
 * The secret scan of the privacy check (CONTRACT 6; docs/secret-scan.md). Evidence
 * is meant to be shown to others, so beyond the bridge's own credentials (which the bridge's check
 * looks for) no file the check covers may hold a secret of a well-known format. It runs in the
 * validator child, never on the bridge's event loop, over exactly the bytes the bridge hashed.
 *
 * Threats: a finding echoed back (the refusal names the artifact, the line and the rule, never
 * the value: secretlint's `message` and `data` spell the secret, and nothing here reads them); a
 * finding waved through by the artifact's own author (a `secretlint-disable` comment is ignored;
 * only the allow-list at the root, bound by line hash and signed with the inventory, lets one
 * through); and a scan that costs without bound (at most SECRET_SCAN_MAX_BYTES a file, and the
 * validators' deadline over all).
 */
export const SECRET_SCAN_MAX_BYTES = 32 * 1024 * 1024;
/** Findings listed per artifact; past it, one more problem counts the rest. */
const FINDINGS_SHOWN = 10;

const FILTER_COMMENTS = '@secretlint/secretlint-rule-filter-comments';
const AWS = '@secretlint/secretlint-rule-aws';

/**
 * The recommended preset's rules, each registered on its own (secretlint 12.0.0 does not honour
 * `disabled` on a rule inside a preset), and ours (secret-rules.ts).
 */
const CONFIG = {
  rules: [
    // The comment filter is left out: a `secretlint-disable` comment is written by whoever writes
    // the artifact, so it must not switch a rule off.
    ...recommendedRules
      .filter((rule) => rule.meta.id !== FILTER_COMMENTS)
      .map((rule) => ({
        id: rule.meta.id,
        rule,
        // The access key id on its own too (AKIA...): half of a key pair, and it names the account.
        ...(rule.meta.id === AWS ? { options: { enableIDScanRule: true } } : {}),
      })),
    ...HARNESS_SECRET_RULES.map((rule) => ({ id: rule.meta.id, rule })),
  ],
};

/** The scan reads the allow-list by name; every other file it reads is one the bridge verified. */
export const secretScanInputs: InputsOf = () => ({ files: [SECRETS_ALLOWED_PATH], verifiedFiles: true });

export interface SecretFinding {
  path: string;
  /** 1-based, counting `\n` line breaks. */
  line: number;
  ruleId: string;
  messageId: string;
  /** SHA-256 hex of the line's UTF-8 bytes without its line break: what an allow entry names. */
  lineSha256: string;
}

/** Where each line of `text` starts (UTF-16 indexes), for lineAt. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** The line `offset` falls on (1-based), and the hash of that line without its line break. */
function lineAt(text: string, starts: readonly number[], offset: number) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((starts[mid] as number) <= offset) lo = mid;
    else hi = mid - 1;
  }
  const end = lo + 1 < starts.length ? (starts[lo + 1] as number) - 1 : text.length;
  const line = text.slice(starts[lo], end).replace(/\r$/, '');
  return { line: lo + 1, lineSha256: createHash('sha256').update(line, 'utf8').digest('hex') };
}

/** Every finding in `text`, the artifact at `path`, in order. Every file is scanned as UTF-8 text. */
export async function scanText(path: string, text: string): Promise<SecretFinding[]> {
  const result = await lintSource({
    source: { content: text, filePath: path, ext: '', contentType: 'text' },
    options: { config: CONFIG, noPhysicFilePath: true, maskSecrets: true },
  });
  const starts = lineStarts(text);
  return result.messages
    .map((m) => ({ path, ruleId: m.ruleId, messageId: m.messageId, ...lineAt(text, starts, m.range[0]) }))
    .sort((a, b) => a.line - b.line || a.ruleId.localeCompare(b.ruleId));
}

const findingKey = (f: Pick<SecretFinding, 'ruleId' | 'messageId' | 'path' | 'lineSha256'>) =>
  JSON.stringify([f.ruleId, f.messageId, f.path, f.lineSha256]);

/** The allowed findings' keys, or the problem with the allow-list (which then allows nothing). */
async function allowList(env: FinishLineEnv & { realRoot: string }): Promise<Set<string> | string[]> {
  const doc = await loadDocument<SecretsAllowed>(
    env.realRoot,
    SECRETS_ALLOWED_PATH,
    SECRETS_ALLOWED_SCHEMA_ID,
    env.verified,
  );
  if (doc.ok) return new Set(doc.value.entries.map(findingKey));
  return doc.missing ? new Set() : doc.problems;
}

/**
 * What the scan covers: with the bridge's digests, every file its artifact and privacy check
 * resolved (the claimed artifacts, the referenced documents and the paths they name, the
 * validators' by-name inputs, the allow-list). A local check without them (`harness explain`,
 * `harness.finish_line_check`) scans the claimed artifacts, the referenced documents and the paths
 * they name, and the allow-list.
 */
async function scannedPaths(facts: RunFacts, env: FinishLineEnv & { realRoot: string }) {
  const verified = env.verified;
  if (verified !== undefined) return Object.keys(verified).filter((p) => verified[p] !== null);
  const named = (await documentRefsHere(env.realRoot, REFERENCED_DOCUMENTS)).flatMap((d) => d.paths ?? []);
  return [
    ...new Set([
      ...Object.keys(facts.state.artifacts),
      ...REFERENCED_DOCUMENTS,
      ...named,
      SECRETS_ALLOWED_PATH,
    ]),
  ];
}

/** The bytes at `path` as the bridge verified them; null when a local check finds nothing to read. */
async function verifiedText(env: FinishLineEnv & { realRoot: string }, path: string) {
  let bytes: Buffer;
  try {
    bytes = await readArtifact(env.realRoot, path, SECRET_SCAN_MAX_BYTES);
  } catch (err) {
    if (env.verified === undefined) return null;
    // Gone since the bridge hashed it: the same words as any other read the bridge did not verify.
    const absent = err instanceof ArtifactError && err.message === `${path} does not exist`;
    const reason = err instanceof Error ? err.message : String(err);
    return {
      problem:
        (absent ? unverifiedRead(env.verified, path, null) : null) ??
        `artifact ${path} cannot be scanned for secrets: ${reason}`,
    };
  }
  const problem = unverifiedRead(env.verified, path, createHash('sha256').update(bytes).digest('hex'));
  return problem === null ? { text: bytes.toString('utf8') } : { problem };
}

/**
 * Scans every file the privacy check covers and reports each finding the allow-list does not
 * name: `artifact <path> line <n> holds a secret: <rule id> <message id>`.
 */
export async function secretScan(facts: RunFacts, env: FinishLineEnv): Promise<string[]> {
  const realRoot = env.realRoot;
  if (realRoot === null) return [];
  const rooted = { ...env, realRoot };
  const allowed = await allowList(rooted);
  const problems = Array.isArray(allowed) ? [...allowed] : [];
  for (const path of (await scannedPaths(facts, rooted)).sort()) {
    const read = await verifiedText(rooted, path);
    if (read === null) continue;
    if ('problem' in read) {
      problems.push(read.problem);
      continue;
    }
    const found = (await scanText(path, read.text)).filter(
      (f) => Array.isArray(allowed) || !allowed.has(findingKey(f)),
    );
    for (const f of found.slice(0, FINDINGS_SHOWN))
      problems.push(`artifact ${path} line ${f.line} holds a secret: ${f.ruleId} ${f.messageId}`);
    if (found.length > FINDINGS_SHOWN)
      problems.push(`artifact ${path} holds ${found.length - FINDINGS_SHOWN} more secrets`);
  }
  return problems;
}
