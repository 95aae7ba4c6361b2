//! What the game's page (`web/`) and the console (`console/`) share of
//! talking to their server, embedded in both bundles: the error a refusal
//! becomes, an answer read, and the hint that this browser has a session.

/** A refusal or failure from the server, with its stable `code`. */
export class ApiError extends Error {
  constructor(status, code, message, detail = {}) {
    super(message);
    this.status = status;
    this.code = code;
    /** The error's other fields (`rules_version`, `permission`, ...). */
    this.detail = detail;
  }
}

/**
 * Reads `response`: its JSON body, or null when there is none (or it is
 * not JSON). A refusal (not 2xx) throws what `refusal` makes of the body's
 * `error` object (`{}` when the body has none).
 */
export async function readAnswer(response, refusal) {
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) throw refusal(data && data.error ? data.error : {});
  return data;
}

/**
 * Whether this browser had a session when last seen, kept in localStorage
 * under `key`. The session cookie is HttpOnly, so the page cannot see it;
 * without this hint a first visit would ask who is logged in only to be
 * told 401, an error in the browser's console. The function returned reads
 * the hint (`hint()`: true when storage is refused, so the page asks) or
 * sets it (`hint(true)`, `hint(false)`).
 */
export function sessionHint(key) {
  return (on) => {
    try {
      if (on === undefined) return localStorage.getItem(key) === '1';
      if (on) localStorage.setItem(key, '1');
      else localStorage.removeItem(key);
    } catch {
      return true;
    }
    return on;
  };
}
