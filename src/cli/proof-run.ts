import { createHash } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import { arch, platform } from 'node:os';
import { isAbsolute, relative, sep } from 'node:path';
import type { Command } from 'commander';
import { execa } from '#execa';
import { IGNORED_FILES_MAX, IGNORED_FILES_SCHEMA_ID, type Proof } from '../contract/artifacts/index.js';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { claimArtifact } from '../validators/artifact-root.js';
import { changesSince, headCommit } from '../validators/git.js';
import { ignoredListingPath, listIgnoredFiles } from '../validators/ignored-files.js';
import { CREDENTIAL_VARS, UsageError } from './env.js';
import { writeJsonArtifact } from './evidence-tools.js';
import { localArtifactMap, realArtifactRoot, repoRootFromEnv } from './local-paths.js';
import { terminalJson } from './terminal.js';

/**
 * `harness proof run --run <id> --artifact-root D -- <command...>`: runs the command with a
 * scrubbed environment (PATH, HOME, LANG and any --env names; never a bridge credential), then
 * writes the configured proof artifact atomically with the real exit code, timestamps, the SHA-256
 * of the combined output and the commit the tree was at. Exit code: 0 passed, 1 failed.
 */
export function shellQuote(args: readonly string[]): string {
  return args
    .map((a) => (/^[A-Za-z0-9_/.,:=@%+-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`))
    .join(' ');
}

export function proofEnvironment(pass: readonly string[], env: NodeJS.ProcessEnv = process.env) {
  const out: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', ...pass]) {
    if ((CREDENTIAL_VARS as readonly string[]).includes(name))
      throw new UsageError(`--env ${name}: credentials are never passed to a proof command`);
    const v = env[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}

export function registerProofRun(program: Command): void {
  const proof = program.command('proof').description('portable proof tooling');
  proof
    .command('run')
    .description('run a command and record proof/proof.json (harness.proof.v1)')
    .requiredOption('--run <id>', 'run ID the proof binds')
    .requiredOption('--artifact-root <dir>')
    .option('--adapter-path <path>', 'adapter whose artifactByNode.prove names the proof path')
    .option('--env <name...>', 'extra environment variable names to pass to the command', [])
    .option('--summary <text>')
    .argument('<command...>', 'the command, after --')
    .action(
      async (
        command: string[],
        opts: { run: string; artifactRoot: string; adapterPath?: string; env: string[]; summary?: string },
      ) => {
        if (!RUN_ID_PATTERN.test(opts.run)) throw new UsageError('--run is not a canonical run ID');
        const root = await realArtifactRoot(opts.artifactRoot);
        const path = (await localArtifactMap(root, opts.adapterPath)).prove;
        const env = proofEnvironment(opts.env);
        const startedAt = new Date().toISOString();
        const r = await execa(command[0]!, command.slice(1), {
          extendEnv: false,
          env,
          all: true,
          reject: false,
          stdin: 'ignore',
          encoding: 'buffer',
          maxBuffer: 256 * 1024 * 1024,
        });
        const completedAt = new Date().toISOString();
        const output = Buffer.from(r.all ?? new Uint8Array());
        process.stderr.write(output);
        const exitCode = r.exitCode ?? -1;
        const passed = exitCode === 0 && !r.failed;
        const doc: Proof = {
          schema: 'harness.proof.v1',
          generatedAt: completedAt,
          runId: opts.run,
          status: passed ? 'passed' : 'failed',
          summary:
            opts.summary ??
            `${shellQuote(command).slice(0, 200)} ${passed ? 'passed' : `exited ${exitCode}`}`,
          commands: [
            {
              command: shellQuote(command),
              exitCode,
              startedAt,
              completedAt,
              outputDigest: `sha256:${createHash('sha256').update(output).digest('hex')}`,
            },
          ],
          environment: {
            id: `${platform()}-${arch()}-node${process.versions.node.split('.')[0]}`,
            platform: `${platform()}-${arch()}`,
            node: process.version,
          },
        };
        const subject = await proofSubject(root, path, opts.run);
        if (subject) doc.subject = subject;
        await writeJsonArtifact(root, path, doc);
        process.stdout.write(`${terminalJson({ ok: passed, path, status: doc.status, exitCode })}\n`);
        process.exitCode = passed ? 0 : 1;
      },
    );
}

/**
 * The commit the repository is at, whether its tree (outside the artifact root) is dirty, and the
 * listing of its git-ignored files with their identities, written beside the proof and bound by
 * hash (docs/finish-line-git.md, "Post-proof edits to ignored files"). Past IGNORED_FILES_MAX ignored
 * files no listing is written: a commissioned run then cannot complete, and stderr says why.
 */
async function proofSubject(
  realRoot: string,
  proofPath: string,
  runId: string,
): Promise<Proof['subject'] | null> {
  const repo = await realpath(repoRootFromEnv()).catch(() => null);
  if (repo === null) return null;
  const commit = await headCommit(repo);
  if (commit === null) return null;
  const rel = relative(repo, realRoot);
  const inside = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
  const changed = await changesSince(repo, commit, inside ? rel.split(sep).join('/') : null);
  const subject: NonNullable<Proof['subject']> = { commit, dirty: changed === null || changed.length > 0 };
  const files = await listIgnoredFiles(repo, realRoot);
  if (files === null || !Array.isArray(files)) {
    const why = files === null ? 'git cannot list them' : `${files.tooMany}, more than ${IGNORED_FILES_MAX}`;
    process.stderr.write(`harness proof run: the ignored files are not recorded (${why})\n`);
    return subject;
  }
  const listing = ignoredListingPath(proofPath);
  await writeJsonArtifact(realRoot, listing, { schema: IGNORED_FILES_SCHEMA_ID, runId, files });
  subject.ignored = { path: listing, sha256: (await claimArtifact(realRoot, listing)).sha256 };
  return subject;
}
