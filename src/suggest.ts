/**
 * "Did you mean …?" for a mistyped name: the closest of the names that exist, by edit distance
 * (a swap of two neighbouring letters is one edit), as commander suggests commands and flags.
 */

/** More edits than this and a name is a different word, not a typo. */
const maxEdits = 3;

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > maxEdits) return Math.max(a.length, b.length);
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, before[j - 2]! + 1);
      current.push(d);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The name closest to `word`, or undefined when none is close: at most 3 edits, and more than
 * 40 % of the longer name left unchanged (so `ab` suggests nothing for `xy`). Ties go to the
 * first in `names`.
 */
export function closestName(word: string, names: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = maxEdits + 1;
  for (const name of names) {
    if (name.length <= 1 || name === word) continue;
    const distance = editDistance(word, name);
    const length = Math.max(word.length, name.length);
    if ((length - distance) / length <= 0.4) continue;
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}
