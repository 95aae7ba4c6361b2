//! A page's language, `fr` or `en`, as the game's page (`web/`) and the
//! console (`console/`) both keep it, embedded in both bundles: each page
//! has its own words and its own key in localStorage.

/**
 * The language of a page, starting at `initial`: `current()`; `set(next)`
 * switches it, remembers it in localStorage under `key`, rewrites the
 * page (`apply()`) and calls every listener with it; `onChange(fn)` adds
 * a listener.
 */
export function pageLanguage(key, initial, apply) {
  let lang = initial;
  const listeners = [];
  return {
    current: () => lang,
    set(next) {
      lang = next === 'en' ? 'en' : 'fr';
      try {
        localStorage.setItem(key, lang);
      } catch {
        // Not remembered: switched for this page only.
      }
      apply();
      for (const fn of listeners) fn(lang);
    },
    onChange(fn) {
      listeners.push(fn);
    },
  };
}
