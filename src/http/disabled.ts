import { ApiError } from './errors.ts';

/** Operations the spec marks disabled; each is off unless ENABLED_OPERATIONS names it (or says all). */
export const DISABLABLE_OPERATIONS = [
  'tags.create',
  'tags.update',
  'tags.delete',
  'tag-associations.create',
  'tag-associations.update',
  'tag-associations.delete',
] as const;

/** Name of a switchable operation. */
export type DisablableOperation = (typeof DISABLABLE_OPERATIONS)[number];

/** Checks ENABLED_OPERATIONS; an unknown name is a start-up error naming the variable. */
export function validateEnabledOperations(enabled: readonly string[]): void {
  for (const name of enabled) {
    if (name !== 'all' && !(DISABLABLE_OPERATIONS as readonly string[]).includes(name)) {
      throw new Error(
        `Invalid environment variable ENABLED_OPERATIONS: unknown operation ${JSON.stringify(name)}; known: all, ${DISABLABLE_OPERATIONS.join(', ')}`,
      );
    }
  }
}

/** Whether a switchable operation is on. */
export function isOperationEnabled(enabled: readonly string[], operation: DisablableOperation): boolean {
  return enabled.includes('all') || enabled.includes(operation);
}

/** The answer of a switched-off operation. */
export function operationDisabled(operation: DisablableOperation): ApiError {
  return new ApiError(
    'operation_disabled',
    `The operation ${operation} is disabled on this server. An operator can switch it on with ENABLED_OPERATIONS=${operation}.`,
  );
}
