import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { BridgeError, type ErrorCode, errorBody, PROBLEMS_MAX_BYTES } from '../contract/index.js';
import { StoreUnavailable } from '../storage/pg/journal.js';
import { RunIntegrityError } from '../storage/run-files.js';
import { RunCeilingError } from '../storage/run-index.js';
import { StorageFailure } from '../storage/storage-failure.js';
import { shuttingDown } from './run-queue.js';
import { boundedLines } from './view-bounds.js';

/** Which contract code a schema failure maps to, per route part. */
export interface ValidationCodes {
  body: ErrorCode;
}

function schemaProblems(err: FastifyError): string[] {
  return (err.validation ?? []).map((v) => {
    const where = v.instancePath === '' ? 'body' : v.instancePath.replace(/^\//, '').replaceAll('/', '.');
    const extra =
      (v.params as
        | { additionalProperties?: string; requiredProperties?: string[]; allowedValues?: unknown[] }
        | undefined) ?? {};
    if (v.keyword === 'additionalProperties' && extra.additionalProperties) {
      return `unknown field ${extra.additionalProperties}`;
    }
    if (v.keyword === 'required' && extra.requiredProperties)
      return `missing ${extra.requiredProperties.join(', ')}`;
    // A closed vocabulary is the contract's own, never client text: the answer lists it.
    if (v.keyword === 'enum' && extra.allowedValues)
      return `${where}: must be one of ${extra.allowedValues.join(', ')}`;
    return `${where}: ${v.message ?? 'is invalid'}`;
  });
}

/** Maps every failure to the contract envelope. No stack, path or credential reaches a client. */
export function toBridgeError(err: FastifyError, bodyCode: ErrorCode): BridgeError {
  if (err instanceof BridgeError) return err;
  // Storage failed, so the bridge is stopping (start.ts): what it admitted and could not make
  // durable is refused as a request arriving now is, never acknowledged, and its retry reaches
  // the restarted bridge.
  if (err instanceof StorageFailure) return shuttingDown();
  // The PostgreSQL store could not reach or commit to its database: nothing was acknowledged,
  // and the bridge goes on (the retry lands once the database is back).
  if (err instanceof StoreUnavailable)
    return new BridgeError('bridge_busy', 'the run store is unavailable; retry shortly', [], {
      'retry-after': '1',
    });
  // Authentication failed while serving the request; the store has quarantined the run.
  if (err instanceof RunIntegrityError)
    return new BridgeError('run_quarantined', 'the run is quarantined', [err.message]);
  // A new run past the data directory's run ceiling (POST /runs or a first event): a new run ID
  // cannot help, so the message says what can.
  if (err instanceof RunCeilingError)
    return new BridgeError(
      'run_history_full',
      `the data directory holds its maximum of ${err.maxRuns} runs; archive it and continue with a fresh data directory`,
    );
  if (err.validation) {
    switch (err.validationContext) {
      case 'querystring':
        return new BridgeError('invalid_query', 'query parameters are invalid', schemaProblems(err));
      case 'params':
        return new BridgeError('invalid_run_id', 'the run ID is not canonical', schemaProblems(err));
      default:
        return new BridgeError(bodyCode, 'the request body violates the contract', schemaProblems(err));
    }
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new BridgeError('payload_too_large', 'the body is larger than this route allows');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new BridgeError('unsupported_media_type', 'writes must be sent as application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new BridgeError('invalid_json', 'the body is not valid JSON');
    default:
      if (err.statusCode === 400 && (err instanceof SyntaxError || err.code === undefined)) {
        return new BridgeError('invalid_json', 'the body is not valid JSON');
      }
      if (err.statusCode === 413) return new BridgeError('payload_too_large', 'the body is too large');
      return new BridgeError('internal_error', 'internal error');
  }
}

/** Consecutive characters of a credential that an echoed text may not contain. */
const CREDENTIAL_WINDOW = 16;

/**
 * Problems echo names the client chose (unknown fields and query names, cut to 64 characters), and
 * a client may have chosen a credential, or its first 64 characters, as a name. Any text sharing
 * CREDENTIAL_WINDOW consecutive characters with a credential is replaced before it is sent.
 */
export function credentialRedactor(secrets: readonly string[]): (text: string) => string {
  const windows = new Set<string>();
  for (const secret of secrets) {
    for (let i = 0; i + CREDENTIAL_WINDOW <= secret.length; i++)
      windows.add(secret.slice(i, i + CREDENTIAL_WINDOW));
  }
  return (text) => {
    for (let i = 0; i + CREDENTIAL_WINDOW <= text.length; i++) {
      if (windows.has(text.slice(i, i + CREDENTIAL_WINDOW)))
        return '[withheld: resembles a bridge credential]';
    }
    return text;
  };
}

export function installErrorHandlers(
  app: FastifyInstance,
  redact: (text: string) => string = (s) => s,
  onRefusal: (req: FastifyRequest, code: ErrorCode) => void = () => {},
): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const code = (req.routeOptions.config as { bodyErrorCode?: ErrorCode } | undefined)?.bodyErrorCode;
    const bridgeError = toBridgeError(err, code ?? 'event_contract_violation');
    onRefusal(req, bridgeError.code);
    if (bridgeError.code === 'internal_error') req.log.error({ err }, 'unhandled error');
    const body = errorBody(bridgeError);
    body.message = redact(body.message);
    // A refused completion or a quarantine can list a problem per path its documents name.
    body.problems = boundedLines(body.problems.map(redact), PROBLEMS_MAX_BYTES, 'problem');
    void reply.code(bridgeError.status).headers(bridgeError.headers).send(body);
  });
  app.setNotFoundHandler((_req, reply) => {
    void reply.code(404).send(errorBody(new BridgeError('not_found', 'no such route')));
  });
}
