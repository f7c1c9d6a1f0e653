import { createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';

/**
 * Ed25519 over pre-hashed-free bytes: Node takes `null` as the digest for Ed25519 (passing a digest
 * name throws). This file holds pure functions with plain inputs and outputs so the same code can
 * run in the Piscina pool (errors do not cross the thread boundary; results are plain objects).
 * A thrown error is reported as `error`, distinct from a clean `ok: false`, so a bug in key
 * handling is never mistaken for "the signature did not verify".
 */
export interface VerifyTask {
  payload: Uint8Array;
  signatureBase64: string;
  publicKeyPem: string;
}
export type VerifyResult = { ok: true } | { ok: false; error?: string };

export function ed25519PublicKey(pem: string): KeyObject {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== 'ed25519')
    throw new Error(`key type ${key.asymmetricKeyType} is not ed25519`);
  return key;
}

export function verifyEd25519(task: VerifyTask): VerifyResult {
  let key: KeyObject;
  try {
    key = ed25519PublicKey(task.publicKeyPem);
  } catch (err) {
    return { ok: false, error: `public key: ${err instanceof Error ? err.message : String(err)}` };
  }
  const sig = Buffer.from(task.signatureBase64, 'base64');
  if (sig.length !== 64) return { ok: false };
  try {
    return verify(null, task.payload, key, sig) ? { ok: true } : { ok: false };
  } catch (err) {
    return { ok: false, error: `verify: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** Signs with a PEM (PKCS#8) Ed25519 private key; used by `harness review sign` and tests. */
export function signEd25519(payload: Uint8Array, privateKeyPem: string): string {
  const key = createPrivateKey(privateKeyPem);
  if (key.asymmetricKeyType !== 'ed25519')
    throw new Error(`key type ${key.asymmetricKeyType} is not ed25519`);
  return sign(null, payload, key).toString('base64');
}
