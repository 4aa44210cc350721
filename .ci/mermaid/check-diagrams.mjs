// check-diagrams.mjs FILE.md...: renders every ```mermaid block of the given Markdown files
// with Mermaid itself (mermaid-cli's renderer in headless Chromium) and reports each diagram
// that fails as FILE:LINE, LINE being its opening fence. A diagram GitHub would show as a
// syntax error fails here instead. One browser renders them all, so the check takes seconds.
//
// Chromium is Debian's /usr/bin/chromium, or PUPPETEER_EXECUTABLE_PATH: Puppeteer's own
// download is skipped at install (.npmrc ignore-scripts), as CI has no internet access.
import fs from "node:fs";
import { renderMermaid } from "@mermaid-js/mermaid-cli";
import puppeteer from "puppeteer";

const chromium = process.env.PUPPETEER_EXECUTABLE_PATH || "/usr/bin/chromium";

// mermaidBlocks returns the ```mermaid fenced blocks of a Markdown text, each with the line of
// its opening fence. Any other fenced block is skipped whole, so a ```mermaid line shown inside
// a ````markdown example is not taken for a diagram.
function mermaidBlocks(text) {
  const blocks = [];
  let open = null; // the fenced block being read: its fence, info word, first line and body
  text.split(/\r?\n/).forEach((line, i) => {
    if (open === null) {
      const m = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/.exec(line);
      if (m) open = { fence: m[1], info: m[2], line: i + 1, body: [] };
      return;
    }
    // A fence closes with the same character, at least as many times, and nothing after it.
    const m = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(line);
    if (m && m[1][0] === open.fence[0] && m[1].length >= open.fence.length) {
      if (open.info === "mermaid") {
        blocks.push({ line: open.line, definition: open.body.join("\n") });
      }
      open = null;
    } else {
      open.body.push(line);
    }
  });
  return blocks;
}

const diagrams = process.argv.slice(2).flatMap((file) =>
  mermaidBlocks(fs.readFileSync(file, "utf8")).map((block) => ({ file, ...block })),
);

if (!fs.existsSync(chromium)) {
  console.error(`Chromium is needed at ${chromium} (or set PUPPETEER_EXECUTABLE_PATH)`);
  process.exit(1);
}
// The sandbox cannot start as root (CI); the pages rendered are our own docs.
const browser = await puppeteer.launch({ executablePath: chromium, args: ["--no-sandbox"] });
let failures = 0;
try {
  for (const { file, line, definition } of diagrams) {
    try {
      await renderMermaid(browser, definition, "svg");
    } catch (err) {
      failures++;
      console.error(`${file}:${line}: the diagram does not render:\n${err.message}\n`);
    }
  }
} finally {
  await browser.close();
}

if (failures > 0) {
  console.error(`${failures} of ${diagrams.length} Mermaid diagrams do not render`);
  process.exit(1);
}
console.log(`all ${diagrams.length} Mermaid diagrams render`);
