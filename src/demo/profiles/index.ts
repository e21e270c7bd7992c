import { profileA } from './profile-a';
import { profileB } from './profile-b';
import { profileC } from './profile-c';
import type { ProfileDefinition } from './profile';

export const PROFILES: Record<string, ProfileDefinition> = { a: profileA, b: profileB, c: profileC };

export { profileA, profileB, profileC };
export type { ProfileDefinition };
