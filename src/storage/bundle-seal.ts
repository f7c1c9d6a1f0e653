import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import type { BundleArtifactT, BundleEventT, BundleManifestT } from '../contract/bundle.js';
import { canonicalBytes, sha256Hex } from './mac.js';

/**
 * The cryptography of a run bundle (src/contract/bundle.ts), shared by the bridge that signs one
 * (server/export.ts) and the offline reader that checks it (sources/bundle.ts): the digest of each
 * part, the key's ID and the Ed25519 signature over the manifest's canonical JSON.
 */

/** SHA-256 (hex) of a part's canonical JSON: what the manifest lists for it. */
export const partDigest = (part: unknown): string => sha256Hex(canonicalBytes(part));

/** The file's bytes: the bundle's canonical JSON and one newline. */
export const bundleText = (bundle: unknown): string => `${canonicalBytes(bundle)}\n`;

/** SHA-256 (hex) of the public key's SubjectPublicKeyInfo DER: the `keyId` a bundle names. */
export function exportKeyId(key: KeyObject): string {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  return createHash('sha256')
    .update(pub.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

const manifestBytes = (manifest: BundleManifestT) => Buffer.from(canonicalBytes(manifest), 'utf8');

export const signManifest = (manifest: BundleManifestT, privateKey: KeyObject): string =>
  sign(null, manifestBytes(manifest), privateKey).toString('base64');

export function manifestSignedBy(
  manifest: BundleManifestT,
  signature: string,
  publicKey: KeyObject,
): boolean {
  const bytes = Buffer.from(signature, 'base64');
  // Base64 that does not round-trip (stray characters, a changed padding bit) is not the signature.
  if (bytes.length !== 64 || bytes.toString('base64') !== signature) return false;
  return verify(null, manifestBytes(manifest), publicKey, bytes);
}

/** Every path's last claim in journal order: what a bundle lists as the run's claimed artifacts. */
export function lastClaims(events: readonly BundleEventT[]): BundleArtifactT[] {
  const byPath = new Map<string, BundleArtifactT>();
  for (const e of events) {
    if (e.claim)
      byPath.set(e.claim.path, {
        path: e.claim.path,
        sha256: e.claim.sha256,
        size: e.claim.size,
        seq: e.seq,
      });
  }
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * An Ed25519 key from its text: a private key is PKCS #8 DER in base64 (one line, as an env file
 * holds it), a public key SubjectPublicKeyInfo PEM (as export-key.pub holds it). Throws a one-line
 * Error naming what is wrong.
 */
export function parseExportKey(text: string, kind: 'private' | 'public'): KeyObject {
  let key: KeyObject;
  try {
    key =
      kind === 'private'
        ? createPrivateKey({ key: Buffer.from(text.trim(), 'base64'), format: 'der', type: 'pkcs8' })
        : createPublicKey({ key: text, format: 'pem' });
  } catch {
    throw new Error(
      kind === 'private'
        ? 'is not a base64 PKCS #8 private key'
        : 'is not a PEM public key (SubjectPublicKeyInfo)',
    );
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`is an ${key.asymmetricKeyType} key, not Ed25519`);
  return key;
}
