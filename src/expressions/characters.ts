/**
 * The characters of the template language's expressions (syntax.ts): identifiers as JavaScript
 * has them, with `-` inside (`var.my-var`), and white space.
 */

const identifierStartPattern = /[\p{L}\p{Nl}_$]/u;
const identifierPartPattern = /[\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}_$-]|\u200C|\u200D/u;
const spacePattern = /[\t\v\f \u00A0\uFEFF\p{Zs}\n\r]/u;

// ASCII first (nearly every character of a configuration), the Unicode classes after: a
// Unicode-property test for each character would make parsing the slow part of loading.
const isAsciiLetter = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
export const identifierStart = {
  test: (ch: string) => {
    const c = ch.charCodeAt(0);
    if (c < 128) return isAsciiLetter(c) || c === 95 || c === 36;
    return identifierStartPattern.test(ch);
  },
};
export const identifierPart = {
  test: (ch: string) => {
    const c = ch.charCodeAt(0);
    if (c < 128) return isAsciiLetter(c) || (c >= 48 && c <= 57) || c === 95 || c === 36 || c === 45;
    return identifierPartPattern.test(ch);
  },
};
export const spaceCharacter = {
  test: (ch: string) => {
    const c = ch.charCodeAt(0);
    if (c < 128) return c === 32 || (c >= 9 && c <= 13);
    return spacePattern.test(ch);
  },
};
