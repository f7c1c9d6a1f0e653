import { readFile } from 'node:fs/promises';
import t from 'tap';
import { ERROR_CODES, type ErrorCode } from '../../src/contract/errors.js';
import { openApiDocument, publishedSchemas, stableJson } from '../../src/server/openapi.js';
import { OUTSIDE_OPERATIONS } from '../../src/server/route-docs.js';
import { ASSURANCE_RULES, CONTENT_RULES } from '../../src/validators/finish-line.js';
import { STRUCTURAL_RULES } from '../../src/validators/structural.js';

t.test('docs/openapi.json is what the routes generate', async (t) => {
  const committed = await readFile('docs/openapi.json', 'utf8');
  t.equal(committed, stableJson(await openApiDocument()), 'run `npm run docs:api` after changing a route');
});

t.test('the published request schemas match src/contract', async (t) => {
  for (const [name, schema] of Object.entries(publishedSchemas())) {
    t.equal(await readFile(`docs/schema/${name}`, 'utf8'), stableJson(schema), name);
  }
});

t.test(
  'every error code is in docs/openapi.json on the operations that give it, at its status',
  async (t) => {
    type Res = {
      content?: { 'application/json'?: { schema?: { properties?: { error?: { enum?: string[] } } } } };
    };
    const doc = JSON.parse(await readFile('docs/openapi.json', 'utf8')) as {
      paths: Record<string, Record<string, { responses: Record<string, Res> }>>;
    };
    const given = new Set<string>();
    for (const op of Object.values(doc.paths).flatMap((ops) => Object.values(ops))) {
      for (const [status, res] of Object.entries(op.responses)) {
        for (const code of res.content?.['application/json']?.schema?.properties?.error?.enum ?? []) {
          t.equal(
            ERROR_CODES[code as ErrorCode]?.status,
            Number(status),
            `${code} is documented at its status`,
          );
          given.add(code);
        }
      }
    }
    // A code the registry gains is either placed on the routes that give it or declared as one
    // no operation gives (the router's 404, Node's HTTP parser refusals).
    t.same([...given, ...OUTSIDE_OPERATIONS].sort(), Object.keys(ERROR_CODES).sort());
  },
);

t.test('every error code has a 4xx/5xx status and its row in docs/api.md', async (t) => {
  const doc = await readFile('docs/api.md', 'utf8');
  for (const [code, { status, doc: meaning }] of Object.entries(ERROR_CODES)) {
    t.ok(status >= 400 && status < 600, `${code} status`);
    t.ok(
      doc.includes(`| ${status} | \`${code}\` | ${meaning} |`),
      `${code} is documented with status ${status} and the registry's sentence`,
    );
  }
});

t.test(
  'the registry holds exactly the codes of CONTRACT section 3, internal_error and the HTTP parser refusals',
  async (t) => {
    t.same(Object.keys(ERROR_CODES).sort(), [
      'adapter_policy_violation',
      'artifact_verification_failed',
      'bridge_auth_required',
      'bridge_busy',
      'client_supplied_human_token_rejected',
      'event_contract_violation',
      'event_id_conflict',
      'event_state_violation',
      'finish_line_blocked',
      'host_not_allowed',
      'human_approval_required',
      'internal_error',
      'invalid_json',
      'invalid_query',
      'invalid_run_id',
      'malformed_request',
      'not_found',
      'origin_not_allowed',
      'payload_too_large',
      'request_headers_too_large',
      'request_timeout',
      'run_already_exists',
      'run_closed',
      'run_creation_contract_violation',
      'run_history_full',
      'run_not_found',
      'run_quarantined',
      'unsupported_media_type',
    ]);
  },
);

t.test("README's finish-line paragraph counts and names every rule", async (t) => {
  const readme = await readFile('README.md', 'utf8');
  const section = readme
    .slice(readme.indexOf('## Finish line'), readme.indexOf('## Commands'))
    .replace(/\s+/g, ' ');
  const total = STRUCTURAL_RULES.length + CONTENT_RULES.length + ASSURANCE_RULES.length;
  t.match(section, `gated by ${total} rules`);
  // How the paragraph words each rule; a rule added to the registry must be added here too.
  const words: Record<string, string> = {
    'required-nodes': 'nodes',
    'required-artifacts': 'artifacts',
    approvals: 'approvals',
    'self-heal': 'self-heal)',
    'self-heal-proposal': 'self-heal proposal',
    'corrective-work': 'corrective work',
    proof: 'proof and',
    'production-readiness': 'production readiness',
    'route-binding': 'route binding',
    review: 'review roles',
    'review-signature': 'review signature',
    'run-packet': 'run packet',
    waivers: 'waivers',
    'external-validation-runtime': 'external-runtime',
    'post-proof-mutation': 'post-proof-mutation',
  };
  const names = [...STRUCTURAL_RULES, ...CONTENT_RULES, ...ASSURANCE_RULES].map(([name]) => name);
  t.same(names.slice().sort(), Object.keys(words).sort(), 'every rule has its wording');
  for (const name of names) t.ok(section.includes(words[name]!), `README names ${name}`);
});
