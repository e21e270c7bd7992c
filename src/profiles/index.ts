import { profileA } from './profile-a';
import { profileC } from './profile-c';
import type { ProfileDefinition } from './profile';

export const PROFILES: Record<string, ProfileDefinition> = { a: profileA, c: profileC };

export { profileA, profileC };
export type { ProfileDefinition };
