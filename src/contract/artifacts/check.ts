import type { TSchema } from '#typebox';
import { Compile } from '#typebox/compile';

/** A compiled artifact schema returning every violation as `<pointer> <message>` (never just the first). */
export interface DocumentChecker {
  id: string;
  problems(value: unknown): string[];
}

export function documentChecker(id: string, schema: TSchema): DocumentChecker {
  const compiled = Compile(schema);
  return {
    id,
    problems(value) {
      if (compiled.Check(value)) return [];
      const seen = new Set<string>();
      for (const e of compiled.Errors(value)) {
        if (e.keyword === 'boolean') continue; // duplicated by the additionalProperties error
        seen.add(`${e.instancePath === '' ? '/' : e.instancePath} ${e.message}`);
        if (seen.size >= 20) break;
      }
      return seen.size > 0 ? [...seen] : ['does not match its schema'];
    },
  };
}
