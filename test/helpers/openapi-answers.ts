import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import type { Test } from 'tap';

/** An answer as the wire gave it: status, headers (names in lower case) and the parsed body. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** `fetch` Headers or node:http's header record, as one plain record. */
export function headerRecord(headers: Headers | Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  for (const [name, value] of entries) out[name.toLowerCase()] = String(value);
  return out;
}

/** Headers of HTTP's own framing, which no operation documents. */
const FRAMING = new Set([
  'connection',
  'content-length',
  'content-type',
  'date',
  'keep-alive',
  'transfer-encoding',
]);

interface ResponseDoc {
  headers?: Record<string, { schema: object }>;
  content?: Record<string, { schema: object }>;
}
interface OperationDoc {
  responses: Record<string, ResponseDoc>;
}
type Doc = { paths: Record<string, Record<string, OperationDoc>> };

/**
 * Holds answers to the committed docs/openapi.json (what clients are generated from) with ajv:
 * the status must be documented for the operation, the media type and body must match that
 * response, and every header beyond HTTP's framing must be documented and match its schema.
 */
export class OpenApiAnswers {
  readonly doc: Doc;
  private readonly ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false });
  private readonly compiled = new Map<object, ValidateFunction>();

  constructor(path = 'docs/openapi.json') {
    this.doc = JSON.parse(readFileSync(path, 'utf8')) as Doc;
  }

  /** Every documented answer: `METHOD /path status` for a 2xx, `... status code` for an error. */
  documented(): string[] {
    const out: string[] = [];
    for (const [path, ops] of Object.entries(this.doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, res] of Object.entries(op.responses)) {
          const at = `${method.toUpperCase()} ${path} ${status}`;
          const schema = res.content?.['application/json']?.schema as
            | { properties?: { error?: { enum?: string[] } } }
            | undefined;
          const codes = Number(status) >= 400 ? (schema?.properties?.error?.enum ?? ['(no codes)']) : [];
          if (codes.length === 0) out.push(at);
          for (const code of codes) out.push(`${at} ${code}`);
        }
      }
    }
    return out.sort();
  }

  /** Checks `answer` as the document's answer of `op` (`GET /runs/{id}`); returns its key in documented(). */
  check(t: Test, op: string, answer: Answer): string {
    const [method = '', path = ''] = op.split(' ');
    const key = `${op} ${answer.status}`;
    const res = this.doc.paths[path]?.[method.toLowerCase()]?.responses[String(answer.status)];
    if (res === undefined) {
      t.fail(`${op}: status ${answer.status} is not in the document`, { body: answer.body });
      return key;
    }
    const mediaType = (answer.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
    const media = res.content?.[mediaType];
    if (media === undefined) t.fail(`${key}: media type ${JSON.stringify(mediaType)} is not documented`);
    else this.valid(t, media.schema, answer.body, `${key} body`);
    for (const [name, value] of Object.entries(answer.headers)) {
      if (FRAMING.has(name)) continue;
      const header = res.headers?.[name];
      if (header === undefined) t.fail(`${key}: header ${name} is not documented`);
      else this.valid(t, header.schema, headerValue(header.schema, value), `${key} header ${name}`);
    }
    const error = (answer.body as { error?: unknown } | null)?.error;
    return answer.status >= 400 ? `${key} ${String(error)}` : key;
  }

  private valid(t: Test, schema: object, value: unknown, what: string): void {
    let validate = this.compiled.get(schema);
    if (validate === undefined) {
      validate = this.ajv.compile(schema);
      this.compiled.set(schema, validate);
    }
    t.ok(validate(value), `${what} matches the document`, { errors: validate.errors?.slice(0, 5), value });
  }
}

/** A header's text as its schema types it: an integer header is plain decimal digits. */
function headerValue(schema: { type?: string }, text: string): unknown {
  return schema.type === 'integer' && /^\d+$/.test(text) ? Number(text) : text;
}
