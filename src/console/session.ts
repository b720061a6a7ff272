import { useSyncExternalStore } from 'react';
import { currentSession, subscribe, type Session } from './auth.ts';

/** The signed-in person, re-rendering on sign-in, renewal and sign-out. */
export function useSession(): Session | null {
  return useSyncExternalStore(subscribe, currentSession);
}
