/** One hook payload, as every runtime sends it (RUNTIMES.md "Common input fields"). */
export interface Payload {
  session_id: string;
  hook_event_name: string;
  cwd?: string;
  model?: string;
  tool_name?: string;
  tool_input?: Record<string, unknown>;
  [field: string]: unknown;
}

export const NOT_A_PAYLOAD =
  'harness hook: standard input is not a hook payload (a JSON object with session_id and hook_event_name)';

export function parsePayload(text: string): Payload | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
  const p = v as Payload;
  if (typeof p.session_id !== 'string' || p.session_id === '' || typeof p.hook_event_name !== 'string')
    return null;
  if (p.tool_input !== undefined && (p.tool_input === null || typeof p.tool_input !== 'object')) return null;
  return p;
}
