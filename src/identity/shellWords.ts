// Shell text as words: an approximate lexer that never evaluates anything, and the quoting that
// puts an argument back into shell text.

function matchParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") {
      depth--;
      if (depth === 0) return i;
    } else if (c === "'") {
      const j = text.indexOf("'", i + 1);
      if (j < 0) return text.length - 1;
      i = j;
    }
  }
  return text.length - 1;
}

/** Splits shell text into simple commands of unquoted words (approximate, never evaluates). */
export function splitCommands(text: string): string[][] {
  const cmds: string[][] = [];
  let words: string[] = [];
  let w = "";
  let inWord = false;
  const endWord = () => {
    if (inWord) words.push(w);
    w = "";
    inWord = false;
  };
  const endCmd = () => {
    endWord();
    if (words.length > 0) cmds.push(words);
    words = [];
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "\\") {
      if (text[i + 1] !== "\n") w += text[i + 1] ?? "";
      i++;
      inWord = inWord || text[i] !== "\n";
      continue;
    }
    if (c === "'") {
      const j = text.indexOf("'", i + 1);
      const end = j < 0 ? text.length : j;
      w += text.slice(i + 1, end);
      i = end;
      inWord = true;
      continue;
    }
    if (c === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        const d = text[i]!;
        if (d === "\\" && i + 1 < text.length && '"\\$`\n'.includes(text[i + 1]!)) {
          if (text[i + 1] !== "\n") w += text[i + 1];
          i += 2;
          continue;
        }
        if (d === "$" && text[i + 1] === "(") {
          const j = matchParen(text, i + 1);
          w += text.slice(i, j + 1);
          i = j + 1;
          continue;
        }
        w += d;
        i++;
      }
      inWord = true;
      continue;
    }
    if (c === "$" && text[i + 1] === "(") {
      const j = matchParen(text, i + 1);
      w += text.slice(i, j + 1);
      i = j;
      inWord = true;
      continue;
    }
    if (c === "`") {
      const j = text.indexOf("`", i + 1);
      const end = j < 0 ? text.length - 1 : j;
      w += text.slice(i, end + 1);
      i = end;
      inWord = true;
      continue;
    }
    if (c === "#" && !inWord) {
      const j = text.indexOf("\n", i);
      i = j < 0 ? text.length : j - 1;
      continue;
    }
    if (c === "\n" || c === ";" || c === "&" || c === "|" || c === "(" || c === ")") {
      endCmd();
      continue;
    }
    if (c === " " || c === "\t" || c === "\r") {
      endWord();
      continue;
    }
    if ((c === ">" || c === "<") && !inWord) {
      // A redirection: skip the operator and its target word.
      let j = i + 1;
      while (j < text.length && (text[j] === ">" || text[j] === "&")) j++;
      while (j < text.length && (text[j] === " " || text[j] === "\t")) j++;
      while (j < text.length && !" \t\n;&|()".includes(text[j]!)) j++;
      i = j - 1;
      continue;
    }
    w += c;
    inWord = true;
  }
  endCmd();
  return cmds;
}

export function splitWords(s: string): string[] {
  return splitCommands(s)[0] ?? [];
}

export function quoteWord(w: string): string {
  return `'${w.replace(/'/g, `'\\''`)}'`;
}
