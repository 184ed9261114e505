// How a next edit shows beside the text it replaces, kept free of the `vscode` module so that tests run it in
// plain Node.

// The lines that change, and what shows beside each. Lines the edit keeps as they are (the model rewrites a whole
// region) are left alone; the changed ones are paired in order, the new line after the old, and new lines beyond
// the old ones are joined onto the last changed line with " ⏎ ": decorations cannot add lines to the editor, and
// one row that reads left to right is easier to follow than new text spread over lines that do not change.
export interface Preview {
  struck: number[];                              // document lines shown struck through
  beside: { line: number; text: string }[];      // text shown after the end of a line
}

export function preview(oldLines: string[], newLines: string[], start: number): Preview {
  let head = 0;
  while (head < oldLines.length && head < newLines.length && oldLines[head] === newLines[head]) head++;
  let tail = 0;
  while (tail < oldLines.length - head && tail < newLines.length - head &&
         oldLines[oldLines.length - 1 - tail] === newLines[newLines.length - 1 - tail]) tail++;
  const olds = oldLines.slice(head, oldLines.length - tail), news = newLines.slice(head, newLines.length - tail);
  const struck: number[] = [];
  const beside: { line: number; text: string }[] = [];
  // beside its old line the new one reads without its indentation, which lines it up with nothing
  const shown = (l: string) => l.trim() || "(empty line)";
  olds.forEach((old, i) => {
    if (i < news.length && old === news[i]) return;   // kept between two changes
    struck.push(start + head + i);
    if (i < news.length) beside.push({ line: start + head + i, text: shown(news[i]) });
  });
  const extra = news.slice(olds.length).map(shown);
  if (!extra.length) return { struck, beside };
  const last = start + head + olds.length - 1;
  if (beside.length && beside[beside.length - 1].line === last) {
    beside[beside.length - 1].text += " ⏎ " + extra.join(" ⏎ ");
  } else {
    // after the last old line (the line above where nothing old is replaced: an insertion; the first line's own
    // end where it goes at the top)
    beside.push({ line: Math.max(last, 0), text: "+ " + extra.join(" ⏎ ") });
  }
  return { struck, beside };
}
