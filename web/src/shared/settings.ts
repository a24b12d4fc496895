// What the page remembers in the browser (localStorage). Storage can be
// disabled or full (private windows, a policy): then a setting lasts for
// this page only, and nothing else breaks.

/** The remembered value of key, or null when there is none or storage is off. */
export function loadSetting(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

/** Remembers value under key, if storage allows. */
export function saveSetting(key: string, value: string): void {
  try {
    localStorage.setItem(key, value);
  } catch {
    // storage disabled or full: the setting lasts for this page only
  }
}

// What this tab remembers across its own reloads, and no other tab sees
// (sessionStorage): that it held a session's size, say.

/** The value this tab kept under key, or null. */
export function loadTabSetting(key: string): string | null {
  try {
    return sessionStorage.getItem(key);
  } catch {
    return null;
  }
}

/** Keeps value under key for this tab, or forgets it (null), if storage allows. */
export function saveTabSetting(key: string, value: string | null): void {
  try {
    if (value === null) sessionStorage.removeItem(key);
    else sessionStorage.setItem(key, value);
  } catch {
    // storage disabled or full: the tab forgets at its next reload
  }
}
