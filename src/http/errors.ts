/** The closed set of error codes and their HTTP statuses (DESIGN.md section 3). */
export const ERROR_STATUS = {
  invalid_request: 400,
  ambiguous_operation: 400,
  unauthenticated: 401,
  invalid_client: 401,
  login_required: 403,
  forbidden: 403,
  not_found: 404,
  object_not_found: 404,
  operation_disabled: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
} as const;

/** One of the service's error codes. */
export type ErrorCode = keyof typeof ERROR_STATUS;

/** One field-level problem inside an error. */
export interface ErrorDetail {
  field: string;
  message: string;
}

/** An error the API answers with: a code from the closed set, a message that says how to fix it, details per field. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    details?: ErrorDetail[],
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = ERROR_STATUS[code];
    this.details = details;
    this.headers = headers;
  }
}

/** 400 for one bad field. */
export function invalidField(field: string, message: string): ApiError {
  return new ApiError('invalid_request', `Invalid ${field}: ${message}`, [{ field, message }]);
}

/** 404 for an item that does not exist or that the caller may not see: the two are indistinguishable. */
export function objectNotFound(kind: string): ApiError {
  return new ApiError(
    'object_not_found',
    `No ${kind} with that uuid exists, or you may not see it: check the uuid, and that your token's user may see the ${kind}.`,
  );
}
