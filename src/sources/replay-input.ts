import type { KeyObject } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { BUNDLE_MAX_BYTES } from '../contract/bundle.js';
import { bundleReplayInput, readBundleFile } from './bundle.js';
import { readJsonl } from './jsonl.js';
import type { ReplayInput } from './recorded.js';

/**
 * Reads a replay input: an exported bundle (source run-packet), verified with the export key's
 * public half (`publicKey`, asked for only then) before any event is taken from it; otherwise a
 * JSONL file of contract events (source local-jsonl). A file larger than a bundle can be is JSONL.
 */
export async function readReplayInput(
  file: string,
  publicKey: () => Promise<KeyObject>,
): Promise<ReplayInput> {
  const size = await stat(file).then(
    (s) => (s.isFile() ? s.size : Number.POSITIVE_INFINITY),
    () => Number.POSITIVE_INFINITY,
  );
  if (size <= BUNDLE_MAX_BYTES + 1) {
    const text = await readBundleFile(file);
    if (typeof text === 'string') {
      const bundle = await bundleReplayInput(file, text, publicKey);
      if (bundle !== null) return bundle;
    }
  }
  return readJsonl(file);
}
