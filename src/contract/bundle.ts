import { type Static, Type } from '#typebox';
import { TRunStatus } from './enums.js';

/**
 * A run bundle (`harness export`, docs/sources.md "Run bundles"): a run's record as the bridge
 * holds it, signed with the bridge's Ed25519 export key, checkable offline with the public half
 * alone. The signed part is `manifest`; it holds the SHA-256 of each other part (the canonical
 * JSON of `config`, `events` and `artifacts`), so a change to any part fails with that part's
 * name, and `contents` (the artifacts' bytes, base64) are checked against `artifacts`' digests.
 * The whole file is the canonical JSON (RFC 8785) of the bundle and one newline: a change that
 * keeps every value (spacing, key order) is refused as well.
 */
export const BUNDLE_FORMAT = 'harness.run-bundle.v1';

/**
 * The largest bundle the bridge builds and a reader reads (bytes of the file): a run whose events
 * alone exceed it is refused, as is `withArtifacts` when the claimed sizes (base64 included) would.
 */
export const BUNDLE_MAX_BYTES = 64 * 1024 * 1024;

const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' });
const Closed = { additionalProperties: false } as const;

export const BundleManifest = Type.Object(
  {
    format: Type.Literal(BUNDLE_FORMAT),
    runId: Type.String(),
    /** The run's status when exported: `quarantined` bundles hold no config, events or artifacts. */
    status: Type.Union([TRunStatus]),
    quarantine: Type.Union([
      Type.Object({ reasons: Type.Array(Type.String()), since: Type.String() }, Closed),
      Type.Null(),
    ]),
    exportedAt: Type.String(),
    eventCount: Type.Integer({ minimum: 0 }),
    withArtifacts: Type.Boolean(),
    digests: Type.Object({ config: Sha256, events: Sha256, artifacts: Sha256 }, Closed),
  },
  Closed,
);

/** One journal record: the event as stored (absolute paths left out) and the bridge's claim. */
export const BundleEvent = Type.Object(
  {
    seq: Type.Integer({ minimum: 0 }),
    event: Type.Record(Type.String(), Type.Unknown()),
    claim: Type.Union([
      Type.Object(
        { path: Type.String(), sha256: Sha256, size: Type.Integer({ minimum: 0 }), mtimeMs: Type.Number() },
        Closed,
      ),
      Type.Null(),
    ]),
  },
  Closed,
);

/** A claimed artifact: its path and the digest and size of its last claim (seq). */
export const BundleArtifact = Type.Object(
  {
    path: Type.String(),
    sha256: Sha256,
    size: Type.Integer({ minimum: 0 }),
    seq: Type.Integer({ minimum: 0 }),
  },
  Closed,
);

export const RunBundleSchema = Type.Object(
  {
    format: Type.Literal(BUNDLE_FORMAT),
    manifest: BundleManifest,
    /** The sealed run configuration without its absolute paths and the human token's digest. */
    config: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    events: Type.Array(BundleEvent),
    artifacts: Type.Array(BundleArtifact),
    /** Only with `withArtifacts`: each claimed artifact's bytes, base64, by path. */
    contents: Type.Optional(Type.Record(Type.String(), Type.String())),
    /** SHA-256 (hex) of the export key's public half, SubjectPublicKeyInfo DER. */
    keyId: Type.String(),
    /** Ed25519 over the manifest's canonical JSON (UTF-8), base64. */
    signature: Type.String(),
  },
  { ...Closed, description: `A run bundle (${BUNDLE_FORMAT}); docs/sources.md "Run bundles"` },
);

export type RunBundle = Static<typeof RunBundleSchema>;
export type BundleManifestT = Static<typeof BundleManifest>;
export type BundleEventT = Static<typeof BundleEvent>;
export type BundleArtifactT = Static<typeof BundleArtifact>;
