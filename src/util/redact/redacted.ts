/**
 * What stands where a secret was, in text and in values alike. Every rule writes this one string
 * and leaves it alone where it finds it, so that redacting twice changes nothing.
 */
export const REDACTED = "[redacted]";
