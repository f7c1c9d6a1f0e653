import { Type } from '#typebox';
import { PATH_FIELD_MAX, RUN_ID_PATTERN_SOURCE, TEXT_FIELD_MAX } from '../limits.js';

/**
 * Building blocks shared by the artifact schemas. Every artifact document is attacker-authored
 * (an agent writes it), so each object closes its properties and each string has a ceiling.
 */
export const Sha256Hex = Type.String({ pattern: '^[0-9a-f]{64}$', description: 'lowercase hex SHA-256' });
export const Digest = Type.String({
  pattern: '^sha256:[0-9a-f]{64}$',
  description: 'a self-describing digest: sha256:<64 lowercase hex>',
});
/** Full object names only: an abbreviated name is ambiguous and is refused. */
export const CommitSha = Type.String({
  pattern: '^([0-9a-f]{40}|[0-9a-f]{64})$',
  description: 'full git commit object name (SHA-1 or SHA-256 repository)',
});
export const DateTime = Type.String({ format: 'date-time', maxLength: 64 });
export const RunIdString = Type.String({ pattern: RUN_ID_PATTERN_SOURCE, description: 'the bridge run ID' });
export const Text = (description = '', maxLength = TEXT_FIELD_MAX) =>
  Type.String({ minLength: 1, maxLength, description });
/** Relative artifact path; the validators also apply artifactPathProblems (no `..`, `\`, NUL). */
export const RelPath = Type.String({
  minLength: 1,
  maxLength: PATH_FIELD_MAX,
  pattern: '^[^/\\\\]',
  description: 'POSIX path relative to the artifact root',
});
export const Identifier = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$' });

export const ArtifactRef = Type.Object(
  { path: RelPath, sha256: Sha256Hex },
  { additionalProperties: false, description: 'an artifact file bound by its SHA-256' },
);

/** A document may name the validator runtime; only the bridge's own installed code is acceptable. */
export const ValidationRuntime = Type.Object(
  {
    runtime: Type.Literal('harness-bridge', { description: "the bridge's own installed validators" }),
    version: Type.Optional(Text('bridge version', 64)),
  },
  { additionalProperties: false },
);
