// Guards npm scripts: the pinned Node 24 from devDependencies must be the one running.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(
    `This project needs Node 24 (found ${process.version}). Run it through npm scripts after \`npm install\`, which installs the pinned Node into node_modules.`,
  );
  process.exit(1);
}
