import { type Static, Type } from '#typebox';
import { RelPath, Sha256Hex, Text } from './common.js';

export const SECRETS_ALLOWED_SCHEMA_ID = 'harness.secrets-allowed.v1';

/** Where the allow-list lives: at the artifact root, so the review's signed inventory lists it. */
export const SECRETS_ALLOWED_PATH = 'secrets-allowed.json';

/**
 * The secret scan's allow-list (docs/secret-scan.md): each entry lets one finding
 * through, named by the rule that reported it, the artifact and the SHA-256 of the line it starts
 * on. It never holds the value: a line hash matches that one line only, so an entry cannot cover
 * a secret written anywhere else, and editing the line voids it.
 */
export const SecretsAllowedEntry = Type.Object(
  {
    ruleId: Text('the secretlint rule id the refusal names', 200),
    messageId: Text('the message id the refusal names, in parentheses after the rule id', 200),
    path: RelPath,
    /** Of the line's UTF-8 bytes, without its line break (`\n`, or `\r\n`). */
    lineSha256: Sha256Hex,
    reason: Text('why the finding is not a secret', 1000),
  },
  { additionalProperties: false },
);

export const SecretsAllowedSchema = Type.Object(
  {
    schema: Type.Literal(SECRETS_ALLOWED_SCHEMA_ID),
    entries: Type.Array(SecretsAllowedEntry, { maxItems: 1000 }),
  },
  { additionalProperties: false, $id: SECRETS_ALLOWED_SCHEMA_ID, title: SECRETS_ALLOWED_SCHEMA_ID },
);
export type SecretsAllowed = Static<typeof SecretsAllowedSchema>;
