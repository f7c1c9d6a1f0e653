import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { boundFiles } from '../src/server/verdict-inputs.js';
import { claimArtifact } from '../src/validators/artifact-root.js';
import { loadJson, REFERENCED_DOCUMENTS } from '../src/validators/documents.js';
import type { FinishLineStage } from '../src/validators/facts.js';
import { contentRulesFor, runFinishLine, validatorInputs } from '../src/validators/finish-line.js';
import { gitExecutable, useGit } from '../src/validators/git-executable.js';
import { commitNames } from '../src/validators/json-scan.js';
import { verifyEd25519 } from '../src/validators/signature.js';
import { documentRefsHere } from '../src/workers/document-refs.js';
import { assuranceFor, buildFixture, type Fixture } from './helpers/finish-line-fixture.js';

/**
 * The completed-run verdict cache binds what the validators read under the artifact root, as the
 * rules declare it (src/validators/inputs.ts, the third column of the rule tables). This runs the
 * whole validator sequence with every file-system call under the root recorded, on fixtures that
 * take every rule down its reading paths, and fails when a rule opens a path the key does not bind
 * (a declared file, a path named in a declared document, or a directory on the way to one) or
 * lists a directory without declaring that it enumerates the root. Reads by the inventory's
 * batched hashing (the enumeration itself, through the workers seam) are the enumeration's.
 */
const fsp = createRequire(import.meta.url)('node:fs/promises') as Record<string, unknown>;
const RECORDED = ['open', 'lstat', 'stat', 'realpath', 'opendir', 'readdir', 'readFile', 'access'];

interface Access {
  fn: string;
  rel: string;
}

let record: { root: string; accesses: Access[]; paused: boolean } | null = null;
const originals = Object.fromEntries(RECORDED.map((fn) => [fn, fsp[fn]]));
for (const fn of RECORDED) {
  const original = originals[fn] as (...args: unknown[]) => unknown;
  fsp[fn] = (...args: unknown[]) => {
    const path = String(args[0]);
    if (record && !record.paused && (path === record.root || path.startsWith(record.root + sep)))
      record.accesses.push({
        fn,
        rel: path
          .slice(record.root.length + 1)
          .split(sep)
          .join('/'),
      });
    return original(...args);
  };
}
syncBuiltinESMExports();
t.teardown(() => {
  Object.assign(fsp, originals);
  syncBuiltinESMExports();
});

/** Runs the validators with accesses recorded; the inventory's hashing goes through `workers`. */
async function recordedRun(f: Fixture) {
  const rec = { root: f.root, accesses: [] as Access[], paused: false };
  let enumerated = false;
  const workers = {
    claimMany: async (realRoot: string, paths: readonly string[]) => {
      enumerated = true;
      rec.paused = true;
      try {
        const out = [];
        for (const p of paths) {
          const c = await claimArtifact(realRoot, p).catch((err: Error) => err);
          out.push(
            c instanceof Error
              ? { ok: false as const, path: p, message: c.message }
              : { ok: true as const, path: p, sha256: c.sha256, size: c.size },
          );
        }
        return out;
      } finally {
        rec.paused = false;
      }
    },
    verifyEd25519: async (task: Parameters<typeof verifyEd25519>[0]) => verifyEd25519(task),
  };
  record = rec;
  try {
    const result = await runFinishLine(f.facts, { ...f.env, workers });
    return { result, accesses: rec.accesses, enumerated };
  } finally {
    record = null;
  }
}

async function conforms(t: Test, f: Fixture, expectProblems: string[] = []) {
  const { result, accesses, enumerated } = await recordedRun(f);
  t.same(result.problems, expectProblems, 'the fixture reads as expected');
  const inputs = validatorInputs(f.facts);
  const bound = new Set((await boundFiles(f.root, inputs, documentRefsHere)).paths);
  // The secret scan reads the files the bridge's check verified, each held to the digest the check
  // took, which the key binds: here (no bridge digests) the claimed artifacts, the referenced
  // documents and the paths they name, and the directories on the way to each.
  if (inputs.verifiedFiles) {
    const named = (await documentRefsHere(f.root, REFERENCED_DOCUMENTS)).flatMap((d) => d.paths ?? []);
    for (const path of [...Object.keys(f.facts.state.artifacts), ...REFERENCED_DOCUMENTS, ...named]) {
      const parts = path.split('/');
      for (let i = 0; i <= parts.length; i++) bound.add(parts.slice(0, i).join('/'));
    }
  }
  t.ok(accesses.length > 0, `the rules read under the root (${accesses.length} calls)`);
  const unbound = accesses.filter((a) => a.fn !== 'opendir' && a.fn !== 'readdir' && !bound.has(a.rel));
  t.same(unbound, [], 'every path a rule reads is bound by the verdict cache key');
  const listed = accesses.some((a) => a.fn === 'opendir' || a.fn === 'readdir') || enumerated;
  t.equal(listed, inputs.enumeratesRoot, `enumerates the root: ${listed}`);
  return { accesses, inputs };
}

t.test('a commissioned run: every rule, the review inventory enumerates the root', async (t) => {
  const f = await buildFixture(t);
  const { inputs } = await conforms(t, f);
  t.equal(inputs.enumeratesRoot, true);
});

t.test('a commissioned run with authoritative assurance named only by the packet', async (t) => {
  // Under handoff/, outside the signed inventory: only the packet names it.
  const ASSURANCE = 'handoff/authoritative.json';
  const f = await buildFixture(t);
  await f.write(ASSURANCE, assuranceFor(f.runId, 'semantic'));
  await f.resign();
  const ref = {
    path: ASSURANCE,
    sha256: (await claimArtifact(f.root, ASSURANCE)).sha256,
  };
  await f.repack((p) =>
    Object.assign(p, {
      assuranceLevel: 'semantic',
      authoritativeAssurance: ref,
      claims: [{ id: 'c2', kind: 'semantic', statement: 's' }],
    }),
  );
  const { accesses } = await conforms(t, f);
  t.ok(
    accesses.some((a) => a.rel === ref.path),
    'the packet rule opened the path the packet names',
  );
});

t.test('an ordinary corrective run: the RCA chain reads the packet; no enumeration', async (t) => {
  const f = await buildFixture(t, { commissioned: false, corrective: true });
  const { inputs } = await conforms(t, f);
  t.equal(inputs.enumeratesRoot, false);
});

t.test('an ordinary feature run without an RCA, the assessment node skipped', async (t) => {
  const f = await buildFixture(t, { commissioned: false, corrective: false });
  f.facts.state.nodes['production-readiness'] = {
    state: 'skipped',
    seq: 1,
    skipReason: 'a library',
    failureReason: null,
    recoveryPath: null,
  };
  const { accesses } = await conforms(t, f);
  t.ok(
    accesses.some((a) => a.rel === 'production/layer-assessment.json'),
    'a skipped node’s assessment is still read',
  );
});

t.test('a self-heal resolved by a local proposal: the proposal and the patch it names', async (t) => {
  const f = await buildFixture(t, { commissioned: false, corrective: true });
  await f.write('self_heal/patch.diff', 'diff --git a/app.js b/app.js\n');
  const patch = {
    path: 'self_heal/patch.diff',
    sha256: (await claimArtifact(f.root, 'self_heal/patch.diff')).sha256,
  };
  await f.write('self_heal/pr.json', {
    schema: 'harness.self-heal-proposal.v1',
    runId: f.runId,
    generatedAt: '2025-01-01T00:00:00Z',
    title: 'guard the gate',
    gap: 'the gate missed a case',
    target: { repository: 'example/repo', baseRef: 'main' },
    patch,
    files: ['app.js'],
  });
  const claim = await claimArtifact(f.root, 'self_heal/pr.json');
  f.facts.state.artifacts[claim.path] = {
    ...claim,
    nodeId: 'self-heal',
    seq: 4,
    ts: '2025-01-01T00:00:00Z',
    outcome: 'verified',
    failureReason: null,
    recoveryPath: null,
    skipReason: null,
  };
  f.facts.state.selfHeal = {
    detectedSeq: 3,
    resolvedSeq: 4,
    resolution: { type: 'self_heal.pr_proposed', prUrl: null, artifact: 'self_heal/pr.json' },
  };
  const { accesses } = await conforms(t, f);
  t.ok(
    accesses.some((a) => a.rel === patch.path),
    'the proposal rule opened the patch the proposal names',
  );
});

/**
 * The same principle for the git repository: each content rule runs alone with every git command
 * recorded (a `git` that logs its arguments and runs the real one), and each command
 * must be a read its declaration names, so the verdict cache key binds what it answers: the trust
 * store at HEAD, the working-tree comparison, or a commit named in a declared document.
 * The recorder is named as the git to run (`useGit`, as startup names the git it resolved): a
 * directory under the temporary directory is no place the bridge would take git from.
 */
async function gitRecorder(t: Test) {
  const dir = await mkdtemp(join(tmpdir(), 'hb-git-log-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const real = (await execa('sh', ['-c', 'command -v git'])).stdout.trim();
  const calls = join(dir, 'calls');
  // One file per git process: rules run git concurrently, and lines appended to one shared log
  // piece by piece could interleave.
  await writeFile(
    join(dir, 'git'),
    `#!/bin/sh\nprintf '%s\\037' "$@" > "$(mktemp '${calls}/call.XXXXXX')"\nexec '${real}' "$@"\n`,
  );
  await chmod(join(dir, 'git'), 0o755);
  const previous = gitExecutable();
  return async (fn: () => Promise<unknown>): Promise<string[][]> => {
    await rm(calls, { recursive: true, force: true });
    await mkdir(calls);
    useGit(join(dir, 'git'));
    try {
      await fn();
    } finally {
      useGit(previous);
    }
    const lines = await Promise.all(
      (await readdir(calls)).map((name) => readFile(join(calls, name), 'utf8')),
    );
    // Drop the hardening `-c name=value` pairs and `--git-dir=`/`--work-tree=` before the subcommand.
    return lines.map((l) => {
      const args = l.split('\x1f').slice(0, -1);
      while (args[0] === '-c' || args[0]?.startsWith('--')) args.splice(0, args[0] === '-c' ? 2 : 1);
      return args;
    });
  };
}

/** Each stage's rules, over both fixtures: the `ran` set of `<rule> <git subcommand>`. */
async function gitReads(t: Test, stage: FinishLineStage): Promise<string[]> {
  const recorded = await gitRecorder(t);
  const ran = new Set<string>();
  for (const opts of [{}, { commissioned: false, corrective: true }]) {
    const f = await buildFixture(t, opts);
    const env = { ...f.env, stage };
    for (const [name, rule, inputsOf] of contentRulesFor(f.facts)) {
      const declared = inputsOf(f.facts, stage).repository ?? {};
      const named = new Set<string>();
      for (const doc of declared.commitsNamedIn ?? []) {
        const loaded = await loadJson(f.root, doc);
        if (loaded.kind === 'ok') for (const n of commitNames(loaded.value)) named.add(n);
      }
      for (const [sub, ...args] of await recorded(() => rule(f.facts, env))) {
        // The repository format the shadow git directory copies (git-shadow.ts), read once per
        // config file identity: it decides how git reads, never what a rule is answered.
        if (sub === 'config') {
          t.same(args.slice(0, 1), ['--file'], `${name}: git config reads only the repository format`);
          continue;
        }
        ran.add(`${name} ${sub}`);
        const names = args.flatMap((a) => a.match(/[0-9a-f]{40}/g) ?? []);
        if (sub === 'cat-file' && args[0] === 'blob')
          t.equal(declared.trustStore, true, `${name}: git cat-file ${args.join(' ')}`);
        // update-index writes only the bridge-private index the comparison hashes the work tree into.
        else if (sub === 'diff' || sub === 'ls-files' || sub === 'update-index')
          t.equal(declared.workingTree, true, `${name}: git ${sub} compares the working tree`);
        else if (sub === 'cat-file' || sub === 'merge-base' || sub === 'rev-parse')
          t.ok(
            names.length > 0 && names.every((n) => named.has(n)),
            `${name}: git ${sub} looks up commits named in ${JSON.stringify(declared.commitsNamedIn)}`,
          );
        else t.fail(`${name}: git ${sub} is no repository read the key binds`);
      }
    }
  }
  return [...ran].sort();
}

const COMMIT_READS = ['corrective-work cat-file', 'corrective-work merge-base', 'corrective-work rev-parse'];

t.test('every git command a rule runs at the gate is a repository read it declares', async (t) => {
  t.same(
    await gitReads(t, 'gate'),
    [
      ...COMMIT_READS,
      'post-proof-mutation diff',
      'post-proof-mutation ls-files',
      'post-proof-mutation update-index',
      'review-signature cat-file',
    ],
    'the fixtures take every rule that runs git down its git reads',
  );
});

t.test('a completed-run read compares no working tree: only commits and the trust store', async (t) => {
  t.same(
    await gitReads(t, 'read'),
    [...COMMIT_READS, 'post-proof-mutation cat-file', 'review-signature cat-file'],
    'the proven commit is looked up, the working tree is not listed',
  );
  const f = await buildFixture(t);
  t.equal(validatorInputs(f.facts, 'gate').repository.workingTree, true);
  t.equal(validatorInputs(f.facts, 'read').repository.workingTree, false, 'so the verdict key binds none');
});
