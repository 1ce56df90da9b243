/**
 * Boolean query parameters read the way the API server reads them (apimachinery's
 * `Convert_Slice_string_To_bool`, used for ListOptions, PodLogOptions, PodExecOptions, …):
 * absent, `0` and `false` in any case are false; every other value — `true`, `True`, `1`, `t`,
 * `yes`, even an empty `?watch=` — is true. The API server never rejects such a value, so
 * neither does kube-sim.
 */
export function queryFlag(query: URLSearchParams, name: string): boolean {
  const value = query.get(name);
  if (value === null) return false;
  return value !== '0' && value.toLowerCase() !== 'false';
}
