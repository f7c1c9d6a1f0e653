import { CreateRunSchema, RunEventSchema } from './event.js';

/**
 * Every stored string is signed as RFC 8785 canonical JSON, which has no encoding for a lone
 * surrogate: JSON.parse accepts an escape such as `"\ud800"`, the schema's length checks pass it,
 * and the canonicalizer would throw only when the config or the record is sealed. Such a string is
 * refused here, at validation, naming its field, before anything is created or sealed.
 *
 * Only declared fields are looked at (an undeclared one is refused by the schema anyway), so a
 * problem names a field of the contract, never a client-chosen name. Cheap on the event path:
 * `isWellFormed` answers a one-byte string at once and scans a two-byte one (below 1 ns a
 * character), and a body holds at most 16 KiB of text.
 */
function illFormed(fields: readonly string[]): (body: unknown) => string[] {
  return (body) => {
    if (typeof body !== 'object' || body === null) return [];
    const problems: string[] = [];
    for (const name of fields) {
      const value = (body as Record<string, unknown>)[name];
      if (typeof value === 'string' && !value.isWellFormed())
        problems.push(`${name}: must be well-formed Unicode (it holds a lone surrogate)`);
    }
    return problems;
  };
}

/** Fields of a RunEvent body that are not well-formed Unicode, one problem each. */
export const eventTextProblems = illFormed(Object.keys(RunEventSchema.properties));
/** Fields of a POST /runs body that are not well-formed Unicode, one problem each. */
export const createRunTextProblems = illFormed(Object.keys(CreateRunSchema.properties));
