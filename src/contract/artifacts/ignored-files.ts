import { type Static, Type } from '#typebox';
import { PATH_FIELD_MAX } from '../limits.js';
import { RunIdString } from './common.js';

export const IGNORED_FILES_SCHEMA_ID = 'harness.ignored-files.v1';

/** The most ignored files a proof can record (docs/finish-line-git.md, "Post-proof edits to ignored files"). */
export const IGNORED_FILES_MAX = 100_000;

/**
 * The git-ignored files outside the artifact root as `harness proof run` found them when the proof
 * command had run (`node_modules/`, `.env`, build output): each path, from the top of the work
 * tree, with its lstat identity, so the post-proof comparison can name any that changed since
 * without hashing them. The proof binds the listing by its SHA-256 (`subject.ignored`).
 */
export const IgnoredFilesSchema = Type.Object(
  {
    schema: Type.Literal(IGNORED_FILES_SCHEMA_ID),
    runId: RunIdString,
    files: Type.Array(
      Type.Object(
        {
          path: Type.String({ minLength: 1, maxLength: PATH_FIELD_MAX }),
          identity: Type.String({
            pattern: '^(f|l|o) [0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+$',
            description: 'type (file, link, other), device, inode, size, mtime and ctime in nanoseconds',
          }),
        },
        { additionalProperties: false },
      ),
      { maxItems: IGNORED_FILES_MAX },
    ),
  },
  { additionalProperties: false, $id: IGNORED_FILES_SCHEMA_ID, title: IGNORED_FILES_SCHEMA_ID },
);
export type IgnoredFiles = Static<typeof IgnoredFilesSchema>;
