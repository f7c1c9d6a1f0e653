/**
 * Artifact path rules, in a module of their own without schema imports: the hash workers load it,
 * and a worker thread should start without loading TypeBox.
 */

/** CONTRACT section 6: relative POSIX paths without `..`, `\`, NUL or a leading `/`. */
export function artifactPathProblems(path: string): string[] {
  const problems: string[] = [];
  if (path.startsWith('/')) problems.push('artifact path must be relative');
  if (path.includes('\\')) problems.push('artifact path must not contain a backslash');
  if (path.includes('\0')) problems.push('artifact path must not contain NUL');
  const parts = path.split('/');
  if (parts.some((p) => p === '..')) problems.push('artifact path must not contain ..');
  if (parts.some((p) => p === '' || p === '.') && !path.startsWith('/')) {
    problems.push('artifact path must not contain empty or . segments');
  }
  return problems;
}
