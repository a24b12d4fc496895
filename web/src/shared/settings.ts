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
