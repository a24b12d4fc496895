// The few declarations of node's test runner and assert that the unit
// tests use: the UI's packages hold no @types/node, and these tests need
// no more of it.

declare module 'node:test' {
  type Fn = () => void | Promise<void>;
  /** Runs fn as a test named name. */
  export function test(name: string, fn: Fn): Promise<void>;
  /** Groups tests under name. */
  export function describe(name: string, fn: () => void): void;
  export { test as it };
}

declare module 'node:assert/strict' {
  interface Assert {
    (value: unknown, message?: string): asserts value;
    ok(value: unknown, message?: string): asserts value;
    equal<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
    notEqual(actual: unknown, expected: unknown, message?: string): void;
    deepEqual<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
    throws(fn: () => unknown, message?: string): void;
    match(value: string, re: RegExp, message?: string): void;
  }
  const assert: Assert;
  export default assert;
}
