import { readFile, realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { REVIEW_TRUST_SCHEMA_ID, type ReviewTrust } from '../contract/artifacts/index.js';
import { ArtifactError, readArtifact } from '../validators/artifact-root.js';
import { schemaProblems } from '../validators/documents.js';
import { trustedKeys, trustPinOf, trustStorePath } from '../validators/trust-store.js';
import { UsageError } from './env.js';
import { refuseProblems, writeJsonArtifact } from './evidence-tools.js';
import { shellQuote } from './proof-run.js';

/**
 * `harness review enroll --key-id K --public-key F --allow ACTOR...`: adds an active reviewer key
 * to the repository's review-trust store (the one path the gate reads, `trustStorePath`), creating
 * the store when there is none. The new store is checked as the gate checks the committed one
 * (schema, a key listed twice, a PEM that is not Ed25519) before it is written; a refusal writes
 * nothing. It prints the git commands that commit it and the pin the bridge must then be started
 * with. Nothing is committed and no pin is changed here: enrolment stays an operator's reviewed act.
 */
const STORE_MAX_BYTES = 4 * 1024 * 1024;

async function currentStore(repo: string, path: string): Promise<unknown> {
  let bytes: Buffer;
  try {
    // No link at any component, a regular file inside the repository: as artifacts are opened.
    bytes = await readArtifact(repo, path, STORE_MAX_BYTES);
  } catch (err) {
    if (err instanceof ArtifactError && err.message === `${path} does not exist`)
      return { schema: REVIEW_TRUST_SCHEMA_ID, keys: [] };
    throw new UsageError(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new UsageError(`${path} is not valid JSON; fix it before enrolling a key`);
  }
}

export function registerEnroll(review: Command): void {
  review
    .command('enroll')
    .description("add an active reviewer key to the repository's review-trust store and print its new pin")
    .requiredOption('--key-id <id>', 'the key id reviews will name (signature.keyId)')
    .requiredOption('--public-key <file>', 'the Ed25519 public key PEM (from `harness review keygen`)')
    .requiredOption('--allow <actorId...>', 'actor IDs the key may sign for as independent reviewer')
    .option('--repo <dir>', 'the repository (default: HARNESS_REPO_ROOT, else the current directory)')
    .action(async (opts: { keyId: string; publicKey: string; allow: string[]; repo?: string }) => {
      const repo = await realpath(resolve(opts.repo ?? process.env['HARNESS_REPO_ROOT'] ?? '.')).catch(() => {
        throw new UsageError('--repo does not exist');
      });
      const publicKeyPem = await readFile(opts.publicKey, 'utf8').catch(() => {
        throw new UsageError('--public-key cannot be read');
      });
      const path = await trustStorePath(repo);
      const store = (await currentStore(repo, path)) as ReviewTrust;
      refuseProblems(path, schemaProblems(path, REVIEW_TRUST_SCHEMA_ID, store));
      const next: ReviewTrust = {
        ...store,
        keys: [
          ...store.keys,
          {
            keyId: opts.keyId,
            algorithm: 'ed25519',
            status: 'active',
            publicKeyPem,
            allowedActorIds: opts.allow,
          },
        ],
      };
      const shape = schemaProblems(path, REVIEW_TRUST_SCHEMA_ID, next);
      refuseProblems(path, shape.length > 0 ? shape : trustedKeys(path, next).problems);
      await writeJsonArtifact(repo, path, next);
      process.stderr.write(
        `enrolled ${opts.keyId} in ${path}; commit it, then start the bridge with the new pin (runs created under the old pin keep it)\n`,
      );
      process.stdout.write(
        [
          shellQuote(['git', '-C', repo, 'add', '--', path]),
          shellQuote(['git', '-C', repo, 'commit', '-m', `enrol reviewer key ${opts.keyId}`, '--', path]),
          `HARNESS_REVIEW_TRUST_SHA256=${trustPinOf(next)}`,
          '',
        ].join('\n'),
      );
    });
}
