/**
 * The whole numbers of a text this code or its SQL wrote, one `separator` character between each two, read digit
 * by digit: thousands of them are read on the event loop per search (a deep walk's lists of ids, each candidate's
 * text statistics), where splitting into strings and converting each cost four times as much. An empty text holds
 * none. Throws, with `refusal` of the character, on anything but digits and the separator, and on a number without a
 * digit (two separators in a row, or one at either end).
 */
export function readWholeNumbers(
  text: string,
  separator: string,
  refusal: (char: string) => string,
): number[] {
  const numbers: number[] = [];
  if (text === '') return numbers;
  const sep = separator.charCodeAt(0);
  let value = 0;
  let digits = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      value = value * 10 + (c - 48);
      digits = true;
    } else if (c === sep && digits) {
      numbers.push(value);
      value = 0;
      digits = false;
    } else {
      throw new Error(refusal(JSON.stringify(text[i])));
    }
  }
  if (!digits) throw new Error(refusal(JSON.stringify(separator)));
  numbers.push(value);
  return numbers;
}
