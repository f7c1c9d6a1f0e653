import { createHash, generateKeyPairSync } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { REVIEW_ROLES, type TrustKeyT } from '../contract/artifacts/index.js';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { trustStorePins } from '../server/trust-pin.js';
import { UsageError } from './env.js';
import { type RosterInput, signReview, writeJsonArtifact } from './evidence-tools.js';
import { localArtifactMap, realArtifactRoot } from './local-paths.js';
import { registerEnroll } from './review-enroll.js';

/**
 * `harness review keygen` makes an Ed25519 pair and prints the trust-store entry to enrol (an
 * operator commits it and updates the pin; nothing enrols a key automatically). `harness review
 * sign` writes review/review.json signed over the evidence bundle, inventory and roster.
 */
const ID = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$/;

export function keyIdOf(publicKeyDer: Buffer): string {
  return `ed25519-${createHash('sha256').update(publicKeyDer).digest('hex').slice(0, 16)}`;
}

export function parseRoster(text: string): RosterInput {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new UsageError('--roster is not valid JSON');
  }
  const out = {} as RosterInput;
  for (const role of REVIEW_ROLES) {
    const r = (doc as Record<string, Record<string, unknown>> | null)?.[role];
    const ok = (k: string) => typeof r?.[k] === 'string' && ID.test(r[k] as string);
    if (
      !r ||
      !ok('actorId') ||
      !ok('sessionId') ||
      !ok('executionId') ||
      (r['runtime'] !== undefined && !ok('runtime'))
    ) {
      throw new UsageError(`--roster: role ${role} needs actorId, sessionId and executionId identifiers`);
    }
    out[role] = {
      actorId: r['actorId'] as string,
      sessionId: r['sessionId'] as string,
      executionId: r['executionId'] as string,
      ...(r['runtime'] === undefined ? {} : { runtime: r['runtime'] as string }),
    };
  }
  return out;
}

/** `review sign --help`: the roster file, so nobody learns its fields from a refusal. */
const ROSTER_HELP = `
--roster file: one entry per role (scout, implementer, verifier, independentReviewer), each with
actorId, sessionId and executionId (identifiers: a letter or digit, then letters, digits and
._:@/-), optionally runtime. Each field differs across the four roles (a shared one is a
"collapsed role identity"), and the independentReviewer's actorId must be one the signing key's
allowedActorIds names (harness review enroll --allow). Example:

  {
    "scout":               { "actorId": "scout-agent",   "sessionId": "s-101", "executionId": "x-101" },
    "implementer":         { "actorId": "coder-agent",   "sessionId": "s-102", "executionId": "x-102" },
    "verifier":            { "actorId": "checker-agent", "sessionId": "s-103", "executionId": "x-103" },
    "independentReviewer": { "actorId": "alice",         "sessionId": "s-104", "executionId": "x-104",
                             "runtime": "runtime-b" }
  }

The scout's evidence is the route, the implementer's and verifier's the proof, at their current
hashes: write both before signing.
`;

export function registerReview(program: Command): void {
  const review = program.command('review').description('independent review tooling');
  registerEnroll(review);
  review
    .command('keygen')
    .description('generate an Ed25519 reviewer key pair and print its trust-store entry')
    .option('--out <dir>', 'directory for the PEM files', '.')
    .requiredOption('--actor-id <id...>', 'actor IDs the key may sign for (allowedActorIds)')
    .option('--key-id <id>', 'key id (default: derived from the public key)')
    .action(async (opts: { out: string; actorId: string[]; keyId?: string }) => {
      for (const a of opts.actorId)
        if (!ID.test(a)) throw new UsageError(`--actor-id ${a} is not an identifier`);
      const { publicKey, privateKey } = generateKeyPairSync('ed25519');
      const keyId = opts.keyId ?? keyIdOf(publicKey.export({ type: 'spki', format: 'der' }));
      if (!ID.test(keyId)) throw new UsageError('--key-id is not an identifier');
      const base = join(resolve(opts.out), keyId.replaceAll('/', '_'));
      const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
      try {
        // wx: never overwrite an existing key; 0600: the private key is readable by its owner only.
        await writeFile(`${base}.key.pem`, privateKey.export({ type: 'pkcs8', format: 'pem' }), {
          flag: 'wx',
          mode: 0o600,
        });
        await writeFile(`${base}.pub.pem`, publicKeyPem, { flag: 'wx', mode: 0o644 });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST')
          throw new UsageError(`a key ${keyId} is already in --out ${opts.out}; it is never overwritten`);
        // Never made here: a mistyped --out would otherwise leave a private key somewhere unexpected.
        if (code === 'ENOENT')
          throw new UsageError(`--out ${opts.out}: the directory does not exist; create it first`);
        if (code === 'ENOTDIR') throw new UsageError(`--out ${opts.out} is not a directory`);
        if (typeof code === 'string') throw new UsageError(`--out ${opts.out}: ${(err as Error).message}`);
        throw err;
      }
      const entry: TrustKeyT = {
        keyId,
        algorithm: 'ed25519',
        status: 'active',
        publicKeyPem,
        allowedActorIds: opts.actorId,
      };
      process.stderr.write(
        `wrote ${base}.key.pem and ${base}.pub.pem; enrol this entry in the trust store:\n`,
      );
      process.stdout.write(`${JSON.stringify(entry, null, 2)}\n`);
    });
  review
    .command('pin')
    .description('print HARNESS_REVIEW_TRUST_SHA256 for the trust store committed in the repository')
    .option('--repo <dir>', 'the repository (default: HARNESS_REPO_ROOT, else the current directory)')
    .action(async (opts: { repo?: string }) => {
      const repo = resolve(opts.repo ?? process.env['HARNESS_REPO_ROOT'] ?? '.');
      const { path, live, committed } = await trustStorePins(repo).catch((err: Error) => {
        throw new UsageError(err.message);
      });
      if (live === null) throw new UsageError(`${repo} holds no review-trust store ${path}`);
      // The bridge pins the store as committed and as it is in the worktree: both must agree.
      if (live !== committed) {
        process.stderr.write(
          `harness review pin: ${path} in ${repo} differs from its commit at HEAD: review and commit it, then run this again\n`,
        );
        process.exitCode = 1;
        return;
      }
      process.stdout.write(`HARNESS_REVIEW_TRUST_SHA256=${live}\n`);
    });
  review
    .command('sign')
    .description('sign the evidence bundle, inventory and roster into review/review.json')
    .requiredOption('--run <id>')
    .requiredOption('--artifact-root <dir>')
    .requiredOption('--key <file>', 'PEM (PKCS#8) Ed25519 private key')
    .requiredOption('--key-id <id>', 'the key id enrolled in the trust store')
    .requiredOption(
      '--roster <file>',
      'JSON: the four roles, each {actorId, sessionId, executionId[, runtime]}, pairwise distinct (example below)',
    )
    .option('--adapter-path <path>')
    .option('--verdict <verdict>', 'approved or changes-requested', 'approved')
    .addHelpText('after', ROSTER_HELP)
    .action(
      async (opts: {
        run: string;
        artifactRoot: string;
        key: string;
        keyId: string;
        roster: string;
        adapterPath?: string;
        verdict: string;
      }) => {
        if (!RUN_ID_PATTERN.test(opts.run)) throw new UsageError('--run is not a canonical run ID');
        if (!ID.test(opts.keyId)) throw new UsageError('--key-id is not an identifier');
        if (opts.verdict !== 'approved' && opts.verdict !== 'changes-requested')
          throw new UsageError('--verdict must be approved or changes-requested');
        const root = await realArtifactRoot(opts.artifactRoot);
        const roster = parseRoster(
          await readFile(opts.roster, 'utf8').catch(() => {
            throw new UsageError('--roster cannot be read');
          }),
        );
        const privateKeyPem = await readFile(opts.key, 'utf8').catch(() => {
          throw new UsageError('--key cannot be read');
        });
        const artifactByNode = await localArtifactMap(root, opts.adapterPath);
        const doc = await signReview({
          realRoot: root,
          runId: opts.run,
          roster,
          artifactByNode,
          privateKeyPem,
          keyId: opts.keyId,
          verdict: opts.verdict,
        });
        await writeJsonArtifact(root, 'review/review.json', doc);
        process.stdout.write(
          `${JSON.stringify({ ok: true, path: 'review/review.json', evidenceBundleDigest: doc.evidenceBundleDigest, inventory: doc.inventory.length })}\n`,
        );
      },
    );
}
