export { serveDemoPage } from './server';
export type { DemoPage, DemoPageOptions } from './server';
export { renderPage } from './page';
