import type { SecretLintRuleCreator } from '@secretlint/types';

/**
 * The secrets the secret scan looks for that secretlint's recommended preset (12.0.0) has no rule
 * for: JSON Web Tokens, literal passwords assigned in configuration or code, and PEM private keys
 * shorter than 128 bytes (Ed25519, as `harness review keygen` writes them, and P-256 in SEC1 form),
 * whose DER the preset's private-key rule does not accept. They are written to secretlint's rule
 * interface, so the same engine runs them beside the preset, and their findings are named,
 * allowed and reported the same way (secret-scan.ts). Their messages carry no value.
 */
export const JWT_RULE_ID = 'harness/jwt';
export const PASSWORD_RULE_ID = 'harness/password-assignment';
export const SHORT_PRIVATE_KEY_RULE_ID = 'harness/short-private-key';

const scanner = (id: string): SecretLintRuleCreator['meta'] => ({
  id,
  type: 'scanner',
  recommended: true,
  supportedContentTypes: ['text'],
});

/** Three base64url segments, the first two JSON objects (`{"` encodes as `eyJ`), the last a signature. */
const JWT_PATTERN = /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/g;

function jsonObject(segment: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

const jwtMessages = { JSONWebToken: { en: () => 'found a signed JSON Web Token' } };

/** A signed JWT: its header decodes to a JSON object naming a signing algorithm, its claims to one. */
export const jwtRule: SecretLintRuleCreator = {
  messages: jwtMessages,
  meta: scanner(JWT_RULE_ID),
  create(context) {
    const t = context.createTranslator(jwtMessages);
    return {
      file(source) {
        for (const m of source.content.matchAll(JWT_PATTERN)) {
          const [header, claims] = m[0].split('.') as [string, string];
          const alg = jsonObject(header)?.['alg'];
          if (typeof alg !== 'string' || alg === 'none' || jsonObject(claims) === null) continue;
          context.report({ message: t('JSONWebToken'), range: [m.index, m.index + m[0].length] });
        }
      },
    };
  },
};

/**
 * `password = value`, `"db_password": "value"`, `PASSWD: value`: a key ending in password, passwd,
 * passphrase or pwd, then `=`, `:` or `=>`, then a value, quoted or not, of 12 to 256 characters
 * none of which code uses to name or call something (`$`, braces, brackets, parentheses, `<`, `>`,
 * white space, quotes, `,`, `;`).
 */
const PASSWORD_PATTERN =
  /(?<![A-Za-z0-9])[A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd)["']?\s*(?:=>|[:=])\s*(["'`]?)([^\s"'`$()<>[\]{},;]{12,256})\1/gi;
export const PASSWORD_MIN_ENTROPY = 3;

/** Shannon entropy of the characters of `value`, in bits per character. */
export function shannonEntropy(value: string): number {
  const chars = [...value];
  const counts = new Map<string, number>();
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const k of counts.values()) bits -= (k / chars.length) * Math.log2(k / chars.length);
  return bits;
}

/**
 * A value that reads as a generated or chosen password rather than a placeholder or a reference
 * (`changeme`, `process.env.DB_PASSWORD`, `config.db.password`): a digit, three of the four kinds
 * of character (lower case, upper case, digit, other), and at least PASSWORD_MIN_ENTROPY bits per
 * character (`Aa1Aa1Aa1Aa1` has 1.6).
 */
export function looksLikePassword(value: string): boolean {
  const kinds = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^A-Za-z0-9]/].filter((k) => k.test(value)).length;
  return /[0-9]/.test(value) && kinds >= 3 && shannonEntropy(value) >= PASSWORD_MIN_ENTROPY;
}

const passwordMessages = { HighEntropyPassword: { en: () => 'found a high-entropy password assignment' } };

export const passwordRule: SecretLintRuleCreator = {
  messages: passwordMessages,
  meta: scanner(PASSWORD_RULE_ID),
  create(context) {
    const t = context.createTranslator(passwordMessages);
    return {
      file(source) {
        for (const m of source.content.matchAll(PASSWORD_PATTERN)) {
          const value = m[2] ?? '';
          if (!looksLikePassword(value)) continue;
          const start = m.index + m[0].lastIndexOf(value);
          context.report({ message: t('HighEntropyPassword'), range: [start, start + value.length] });
        }
      },
    };
  },
};

/**
 * A PEM private-key block whose body is a DER SEQUENCE of under 128 bytes: base64 of 0x30 and a
 * short-form length starts `M` then `A` to `H`. The preset's rule takes only long-form lengths
 * (`MI`), so the two never report the same block.
 */
const SHORT_KEY_PATTERN =
  /-----BEGIN ((?:[A-Z0-9]+ )?PRIVATE KEY)-----\s*(M[A-H][A-Za-z0-9+/=\s]{20,200}?)\s*-----END \1-----/g;

const shortKeyMessages = { ShortPrivateKey: { en: () => 'found a PEM private key' } };

export const shortPrivateKeyRule: SecretLintRuleCreator = {
  messages: shortKeyMessages,
  meta: scanner(SHORT_PRIVATE_KEY_RULE_ID),
  create(context) {
    const t = context.createTranslator(shortKeyMessages);
    return {
      file(source) {
        for (const m of source.content.matchAll(SHORT_KEY_PATTERN)) {
          const der = Buffer.from((m[2] ?? '').replace(/\s/g, ''), 'base64');
          // A real DER SEQUENCE: its short-form length covers exactly the rest of the bytes.
          if (der[0] !== 0x30 || der[1] !== der.length - 2) continue;
          context.report({ message: t('ShortPrivateKey'), range: [m.index, m.index + m[0].length] });
        }
      },
    };
  },
};

export const HARNESS_SECRET_RULES: readonly SecretLintRuleCreator[] = [
  jwtRule,
  passwordRule,
  shortPrivateKeyRule,
];
