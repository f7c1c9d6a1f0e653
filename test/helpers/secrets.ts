import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';

/**
 * Fake but well-formed secrets of each family the secret scan looks for, made at test time from
 * random bytes: nothing that looks like a live secret is committed, and each prefix is spelled in
 * two halves so that no file of the repository holds one either.
 */
const UPPER32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const pick = (n: number, alphabet: string) =>
  [...randomBytes(n)].map((b) => alphabet[b % alphabet.length]).join('');
const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const pem = (type: 'pkcs1' | 'pkcs8' | 'sec1', key: ReturnType<typeof generateKeyPairSync>['privateKey']) =>
  key.export({ type, format: 'pem' } as never).toString();

export interface SecretSample {
  family: string;
  /** The line(s) written into an artifact. */
  text: string;
  /** The value that must never be echoed. */
  value: string;
  ruleId: string;
  messageId: string;
}

export function secretSamples(): SecretSample[] {
  const rsa = pem('pkcs1', generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey);
  const ed25519 = pem('pkcs8', generateKeyPairSync('ed25519').privateKey);
  const awsId = `${'AK'}${'IA'}${pick(16, UPPER32)}`;
  // Letters and digits only: a random `/` or `+` at either end would fall outside the rule's word boundary.
  const awsSecret = pick(40, ALNUM);
  const github = `${'gh'}${'p_'}${pick(36, ALNUM)}`;
  const gitlab = `${'glp'}${'at-'}${pick(20, ALNUM)}`;
  const npm = `${'np'}${'m_'}${pick(36, ALNUM)}`;
  const jwt = [
    segment({ alg: 'HS256', typ: 'JWT' }),
    segment({ sub: `user-${pick(6, ALNUM)}`, iat: 1_700_000_000 }),
    randomBytes(32).toString('base64url'),
  ].join('.');
  // Upper and lower case and a digit, whatever the random part holds.
  const password = `Qz7${pick(17, ALNUM)}`;
  return [
    {
      family: 'RSA private key',
      text: rsa,
      value: rsa.split('\n')[1]!,
      ruleId: '@secretlint/secretlint-rule-privatekey',
      messageId: 'PrivateKey',
    },
    {
      family: 'Ed25519 private key',
      text: ed25519,
      value: ed25519.split('\n')[1]!,
      ruleId: 'harness/short-private-key',
      messageId: 'ShortPrivateKey',
    },
    {
      family: 'AWS access key id',
      text: `key id: ${awsId}`,
      value: awsId,
      ruleId: '@secretlint/secretlint-rule-aws',
      messageId: 'AWSAccessKeyID',
    },
    {
      family: 'AWS secret access key',
      text: `aws_secret_access_key = ${awsSecret}`,
      value: awsSecret,
      ruleId: '@secretlint/secretlint-rule-aws',
      messageId: 'AWSSecretAccessKey',
    },
    {
      family: 'GitHub token',
      text: `GITHUB_TOKEN=${github}`,
      value: github,
      ruleId: '@secretlint/secretlint-rule-github',
      messageId: 'GITHUB_TOKEN',
    },
    {
      family: 'GitLab token',
      text: `token: ${gitlab}`,
      value: gitlab,
      ruleId: '@secretlint/secretlint-rule-gitlab',
      messageId: 'GITLAB_PERSONAL_ACCESS_TOKEN',
    },
    {
      family: 'npm token',
      text: `//registry.npmjs.org/:_authToken=${npm}`,
      value: npm,
      ruleId: '@secretlint/secretlint-rule-npm',
      messageId: 'NPM_ACCESS_TOKEN',
    },
    {
      family: 'JSON Web Token',
      text: `Authorization: Bearer ${jwt}`,
      value: jwt,
      ruleId: 'harness/jwt',
      messageId: 'JSONWebToken',
    },
    {
      family: 'password assignment',
      text: `db_password = "${password}"`,
      value: password,
      ruleId: 'harness/password-assignment',
      messageId: 'HighEntropyPassword',
    },
  ];
}

/** A GitHub token on its own: the sample the end-to-end tests plant. */
export function githubToken(): string {
  return `${'gh'}${'p_'}${pick(36, ALNUM)}`;
}

/** What an allow-list entry names a line by. */
export const lineSha256 = (line: string) => createHash('sha256').update(line, 'utf8').digest('hex');
