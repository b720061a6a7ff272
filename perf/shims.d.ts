// Minimal declarations for untyped devDependencies used by the harness.
declare module 'autocannon' {
  function autocannon(opts: Record<string, unknown>, cb?: (err: Error | null, result: any) => void): any;
  export default autocannon;
}
declare module 'oidc-provider' {
  const Provider: any;
  export default Provider;
}
