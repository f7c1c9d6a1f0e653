import t from 'tap';
import { execa } from '#execa';
import { CreateRunSchema, EVENT_TYPES, NODE_IDS, RunEventSchema } from '../../src/contract/index.js';
import { cleanup, secret, startTestBridge } from '../helpers/bridge.js';
import { connectMcp, MAIN } from '../helpers/mcp.js';

const NAMES = [
  'harness.start_run',
  'harness.emit_event',
  'harness.write_artifact',
  'harness.request_approval',
  'harness.finish_line_check',
];

t.test('tools/list names the five tools with descriptions and contract-derived schemas', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const { tools } = await mcp.client.listTools();
  t.same(
    tools.map((x) => x.name),
    NAMES,
  );
  const byName = new Map(tools.map((x) => [x.name, x]));
  for (const tool of tools) {
    t.ok((tool.description ?? '').length > 40, `${tool.name} has a description`);
    t.equal(tool.inputSchema.type, 'object');
    t.equal((tool.inputSchema as { additionalProperties?: unknown }).additionalProperties, false);
    t.ok(tool.inputSchema.required?.includes('runId'), `${tool.name} requires runId`);
  }
  const emit = byName.get('harness.emit_event')!.inputSchema;
  t.same(
    Object.keys(emit.properties ?? {}).sort(),
    ['runId', ...Object.keys(RunEventSchema.properties)].sort(),
    'emit_event takes runId plus exactly the RunEvent fields',
  );
  const props = emit.properties as Record<string, { enum?: string[] }>;
  t.same(props['type']?.enum, [...EVENT_TYPES]);
  t.same(props['nodeId']?.enum, [...NODE_IDS]);
  t.same(
    [...(emit.required ?? [])].sort(),
    ['runId', 'type', 'actor', 'nodeId', 'message', 'status'].sort(),
    'runMode and eventSource default (live, mcp); the rest is required as in the contract',
  );
  const start = byName.get('harness.start_run')!.inputSchema;
  t.same(
    Object.keys(start.properties ?? {}).sort(),
    ['runId', ...Object.keys(CreateRunSchema.properties).filter((k) => k !== 'id')].sort(),
    'start_run takes runId plus the POST /runs fields',
  );
  t.same(start.required, ['runId']);
  const write = byName.get('harness.write_artifact')!.inputSchema;
  t.same([...(write.required ?? [])].sort(), ['nodeId', 'path', 'runId']);
  t.ok(write.properties?.['content'] && write.properties['contentBase64']);
  const approval = byName.get('harness.request_approval')!.inputSchema;
  t.same([...(approval.required ?? [])].sort(), [
    'actor',
    'approvalOwner',
    'approvalScope',
    'message',
    'nodeId',
    'runId',
  ]);
  t.same(byName.get('harness.finish_line_check')!.inputSchema.required, ['runId']);
});

t.test('arguments that break the schema and unknown tools are tool errors, not crashes', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const bad = await mcp.call('harness.emit_event', { runId: 'r1', type: 'node.teleported', extra: 1 });
  t.equal(bad.isError, true);
  t.equal(bad.body['error'], 'invalid_tool_input');
  t.ok(bad.body['problems'].length >= 3, 'every problem at once');
  const badId = await mcp.call('harness.finish_line_check', { runId: '../etc' });
  t.equal(badId.body['error'], 'invalid_tool_input');
  const unknown = await mcp.call('harness.delete_run', { runId: 'r1' });
  t.equal(unknown.isError, true);
  t.equal(unknown.body['error'], 'unknown_tool');
  t.equal((await bridge.req('GET', '/runs')).body['runs'].length, 0, 'nothing reached the bridge');
});

t.test('harness mcp refuses to start holding the integrity key or the human token', async (t) => {
  const base = {
    PATH: process.env['PATH'] ?? '',
    HARNESS_BRIDGE_ACCESS_TOKEN: secret(),
    HARNESS_BRIDGE_URL: 'http://127.0.0.1:9',
  };
  for (const name of ['HARNESS_BRIDGE_INTEGRITY_KEY', 'HARNESS_HUMAN_APPROVAL_TOKEN']) {
    const r = await execa(process.execPath, [MAIN, 'mcp'], {
      extendEnv: false,
      env: { ...base, [name]: secret() },
      input: '',
      reject: false,
    });
    t.equal(r.exitCode, 2, `${name}: exit 2`);
    t.equal(r.stdout, '', `${name}: nothing on the protocol channel`);
    const lines = r.stderr.trim().split('\n');
    t.equal(lines.length, 1, `${name}: one line`);
    t.match(lines[0], name);
  }
  const noToken = await execa(process.execPath, [MAIN, 'mcp'], {
    extendEnv: false,
    env: { PATH: base.PATH },
    input: '',
    reject: false,
  });
  t.equal(noToken.exitCode, 2, 'no access token: exit 2');
  t.match(noToken.stderr, 'HARNESS_BRIDGE_ACCESS_TOKEN');
});

t.test('an unreachable bridge is reported as bridge_unreachable', async (t) => {
  const bridge = await startTestBridge();
  await cleanup(bridge);
  // Port 2, where nothing listens (fetch refuses port 9 as a bad port before connecting); a port
  // just released could be taken by another process meanwhile.
  const mcp = await connectMcp(t, { ...bridge, url: 'http://127.0.0.1:2' });
  const r = await mcp.call('harness.start_run', { runId: 'r1' });
  t.equal(r.isError, true);
  t.equal(r.body['error'], 'bridge_unreachable');
});
