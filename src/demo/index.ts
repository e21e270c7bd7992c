// The demo's entry, `h3-node/demo`: the three profiles of the spec, their
// fixed public credentials, the Profile B page and statistics document, and
// the demo TLS identity. The demo uses the library (src/lib/); the library
// never imports the demo.
export { PROFILES, profileA, profileB, profileC } from './profiles';
export type { ProfileDefinition } from './profiles';
export { BEARER_TOKEN, SESSION_COOKIE, handleProfileA } from './profiles/profile-a';
export { createProfileB } from './profiles/profile-b';
export { BODY_CAP, createProfileC } from './profiles/profile-c';
export { WebTransportStats } from './webtransport-stats';
export type { StatsDocument } from './webtransport-stats';
export { serveDemoPage } from './demo-page';
export type { DemoPage, DemoPageOptions } from './demo-page';
export { DEMO_CERT, DEMO_KEY } from '../lib/identity';
