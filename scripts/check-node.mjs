// Guards npm scripts: the pinned Node 24 from devDependencies must be the one running. Plain JavaScript (.mjs), so
// the Node it refuses (20, which cannot run .ts) can run it and print this rather than a stack trace.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(
    `This project needs Node 24 (found ${process.version}). Run it through npm scripts after \`npm install\`, which installs the pinned Node into node_modules.`,
  );
  process.exit(1);
}
