/**
 * Time-zone names in tend.yml: checked against the platform's IANA database (ICU, through Intl)
 * without loading luxon, which only the planner's schedule arithmetic needs: every command
 * validates its configuration.
 */

/**
 * The zone's canonical IANA name when `name` is one (exactly as the database spells it), else
 * undefined; `suggestion` is the canonical spelling of a name that differs only in case.
 */
export function checkTimeZone(name: string): { valid: boolean; suggestion?: string } {
  // Node 22 and later also take UTC offsets ("+02:00"): not zone names, and not on Node 20.
  if (!/^[A-Za-z]/.test(name)) return { valid: false };
  let canonical: string;
  try {
    // What luxon's IANAZone.isValidZone asks too: the platform's time-zone database (ICU).
    canonical = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return { valid: false };
  }
  if (canonical === name || canonical.toLowerCase() !== name.toLowerCase()) return { valid: true };
  return { valid: false, suggestion: canonical };
}
