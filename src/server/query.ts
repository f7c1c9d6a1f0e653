import { type TInteger, type TOptional, Type } from '#typebox';
import { BridgeError, CURSOR_MAX, queryInteger } from '../contract/index.js';

/** A route's query parameters: each a decimal integer in a range, with the default its handler uses. */
export type QuerySpec = Record<string, { min: number; max: number; default?: number; description?: string }>;

export { CURSOR_MAX };

/**
 * The querystring schema of a route, for its OpenAPI document. strictQuery, from the same spec, is
 * what judges a query: app.ts's validator lets the querystring through unchecked.
 */
export function querySchema(spec: QuerySpec) {
  const props: Record<string, TOptional<TInteger>> = {};
  for (const [name, { min, max, default: fallback, description }] of Object.entries(spec)) {
    props[name] = Type.Optional(
      Type.Integer({
        minimum: min,
        maximum: max,
        ...(fallback === undefined ? {} : { default: fallback }),
        ...(description === undefined ? {} : { description }),
      }),
    );
  }
  return Type.Object(props, { additionalProperties: false });
}

/**
 * Strict query parsing from the raw URL (CONTRACT 4): an unknown name, a repeated name, a value
 * that is not plain decimal digits, or one out of range is 400 `invalid_query`. Fastify's parsed
 * query is not trusted for this because it folds repeats and coerces values.
 */
export function strictQuery(url: string, spec: QuerySpec): Record<string, number> {
  const q = url.indexOf('?');
  const out: Record<string, number> = {};
  if (q < 0) return out;
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const part of url.slice(q + 1).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    let name: string;
    let value: string;
    try {
      name = decodeURIComponent((eq < 0 ? part : part.slice(0, eq)).replaceAll('+', ' '));
      value = eq < 0 ? '' : decodeURIComponent(part.slice(eq + 1).replaceAll('+', ' '));
    } catch {
      problems.push('a query component is not valid percent-encoding');
      continue;
    }
    const range = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!range) {
      problems.push(`unknown query parameter ${JSON.stringify(name.slice(0, 64))}`);
      continue;
    }
    if (seen.has(name)) {
      problems.push(`query parameter ${name} is repeated`);
      continue;
    }
    seen.add(name);
    const n = queryInteger(value);
    if (Number.isNaN(n) || n < range.min || n > range.max) {
      // A cursor's upper bound is the largest safe integer: named, so the message is never false.
      problems.push(`${name} must be an integer from ${range.min} to ${range.max}`);
      continue;
    }
    out[name] = n;
  }
  if (problems.length > 0) throw new BridgeError('invalid_query', 'query parameters are invalid', problems);
  return out;
}
