// Compatibility path: dist/server.js and dist/server.d.ts were the server
// module before the library moved to lib/, and scripts outside the package
// require them. New code imports 'h3-node' (src/index.ts).
export * from './lib/server';
