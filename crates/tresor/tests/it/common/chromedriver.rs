//! Chromedriver and its headless Chromium, each started once and kept for
//! the next browser test: a start costs about 1.4 s of CPU and 0.8 s, and
//! the suite's browser tests start some fifty (BENCHMARKS.md, "The test
//! suite"). A test gets a WebDriver session that another test may have
//! used, made fresh again first ([`Kept::fresh`]): a new tab and none
//! other, so that no page, history or emulated device stays; no cookie, no
//! cache and nothing stored for the sites the last test visited; its logs
//! read out and its keys released. A session that cannot be made fresh is
//! ended and another started.
//!
//! No browser outlives the test process: each chromedriver runs under a
//! shell that waits for its standard input to close (the test process's
//! end, however it ends), then ends the whole process group and removes the
//! browser's profile.

use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Sessions no test uses now, ready to be made fresh.
static IDLE: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// A chromedriver with one WebDriver session on its Chromium, and every
/// origin a test opened in it.
pub struct Kept {
    pub driver: String,
    pub session: String,
    pub origins: Vec<String>,
    _process: DriverProcess,
    _profile: tempfile::TempDir,
}

/// A session for a test: an idle one made fresh, else a new one.
pub async fn session(http: &reqwest::Client, chromium: &Path, chromedriver: &Path) -> Kept {
    loop {
        let idle = IDLE.lock().unwrap().pop();
        let Some(kept) = idle else { break };
        if let Some(kept) = kept.fresh(http).await {
            return kept;
        }
    }
    start(http, chromium, chromedriver).await
}

/// Gives a test's session back, for the next test to make fresh.
pub fn give_back(kept: Kept) {
    IDLE.lock().unwrap().push(kept);
}

/// The origin (`scheme://host:port`) of `url`, if it has one.
pub fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next()?;
    (!host.is_empty() && scheme.starts_with("http")).then(|| format!("{scheme}://{host}"))
}

impl Kept {
    /// This session as a new browser would be, or `None` (and ended) if it
    /// does not answer as it should.
    pub async fn fresh(mut self, http: &reqwest::Client) -> Option<Kept> {
        let _ = self
            .call(http, reqwest::Method::DELETE, "/actions", None)
            .await;
        let _ = self.post(http, "/alert/dismiss", json!({})).await;
        let new_tab = self
            .post(http, "/window/new", json!({"type": "tab"}))
            .await?;
        let new_tab = new_tab["handle"].as_str()?.to_owned();
        let handles = self
            .call(http, reqwest::Method::GET, "/window/handles", None)
            .await?;
        for handle in handles.as_array()?.iter().filter_map(Value::as_str) {
            if handle == new_tab {
                continue;
            }
            self.post(http, "/window", json!({"handle": handle}))
                .await?;
            let url = self.call(http, reqwest::Method::GET, "/url", None).await?;
            self.origins.extend(url.as_str().and_then(origin));
            self.call(http, reqwest::Method::DELETE, "/window", None)
                .await?;
        }
        self.post(http, "/window", json!({"handle": new_tab}))
            .await?;
        let origins = std::mem::take(&mut self.origins);
        let clear = origins
            .iter()
            .map(|origin| {
                (
                    "Storage.clearDataForOrigin",
                    json!({"origin": origin, "storageTypes": "all"}),
                )
            })
            .chain([
                ("Network.clearBrowserCookies", json!({})),
                ("Network.clearBrowserCache", json!({})),
            ]);
        for (cmd, params) in clear {
            let body = json!({"cmd": cmd, "params": params});
            self.post(http, "/goog/cdp/execute", body).await?;
        }
        for log in ["browser", "performance"] {
            self.post(http, "/se/log", json!({"type": log})).await?;
        }
        Some(self)
    }

    /// [`Kept::call`] with `POST` and a JSON `body`.
    async fn post(&self, http: &reqwest::Client, path: &str, body: Value) -> Option<Value> {
        self.call(http, reqwest::Method::POST, path, Some(body))
            .await
    }

    /// WebDriver's `value` for `method path` in this session, or `None`
    /// for an error or no answer.
    async fn call(
        &self,
        http: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Option<Value> {
        let url = format!("{}/session/{}{path}", self.driver, self.session);
        let mut request = http.request(method, url).timeout(Duration::from_secs(10));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.ok()?.json().await.ok()?;
        let value = answer.get("value")?.clone();
        value.get("error").is_none().then_some(value)
    }
}

/// A new chromedriver and a session on a new Chromium with a profile of
/// its own.
async fn start(http: &reqwest::Client, chromium: &Path, chromedriver: &Path) -> Kept {
    let profile = tempfile::tempdir().unwrap();
    let (process, port) = driver_on_a_free_port(chromedriver, profile.path()).await;
    let driver = format!("http://127.0.0.1:{port}");
    super::wait::answers(&format!("{driver}/status"), Duration::from_secs(20)).await;
    let args = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ]
    .map(str::to_owned)
    .into_iter()
    .chain([format!("--user-data-dir={}", profile.path().display())])
    .collect::<Vec<_>>();
    let capabilities = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        // The network's events too, so that a test can say which
        // requests the page sent (`requests_sent`), whatever sent them.
        "goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"},
        "goog:chromeOptions": {"binary": chromium, "args": args,
            "perfLoggingPrefs": {"enableNetwork": true, "enablePage": false}},
    }}});
    let response = http
        .post(format!("{driver}/session"))
        .json(&capabilities)
        .send()
        .await
        .expect("chromedriver answers");
    let response: Value = response
        .json()
        .await
        .expect("a JSON answer from chromedriver");
    let session = response["value"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no WebDriver session: {response}"))
        .to_owned();
    Kept {
        driver,
        session,
        origins: Vec::new(),
        _process: process,
        _profile: profile,
    }
}

/// Chromedriver, in a process group of its own under a shell that ends
/// the group and removes `profile` once its standard input closes. On
/// drop the whole group (chromedriver and every Chromium it started) is
/// killed.
struct DriverProcess {
    child: Child,
    _alive: std::process::ChildStdin,
}

/// The shell around chromedriver: chromedriver in the background, its
/// output the shell's; when the test process's end closes the shell's
/// input, the group is asked to end, the profile removed, the rest killed.
const WATCHER: &str = r#"profile=$1; shift
"$@" </dev/null &
trap '' TERM
while read -r _; do :; done
kill -TERM 0; sleep 1; rm -rf "$profile"; kill -KILL 0"#;

/// chromedriver on a port the kernel gives, which it says once it has bound
/// it. It binds the kernel's IPv6 port, then the same number on IPv4, where
/// another process of the machine may hold it already ("IPv4 port not
/// available. Exiting..."): then it is started again, on another port.
async fn driver_on_a_free_port(chromedriver: &Path, profile: &Path) -> (DriverProcess, u16) {
    for _ in 0..10 {
        let mut child = Command::new("sh")
            .args(["-c", WATCHER, "sh"])
            .arg(profile)
            .arg(chromedriver)
            .arg("--port=0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("chromedriver starts");
        let printed = super::process::Printed::follow(&mut child);
        let alive = child.stdin.take().expect("a piped standard input");
        let process = DriverProcess {
            child,
            _alive: alive,
        };
        let port = printed
            .wait_for_or_end("chromedriver's port", |line| {
                line.strip_prefix("ChromeDriver was started successfully on port ")?
                    .trim_end_matches('.')
                    .parse::<u16>()
                    .ok()
            })
            .await;
        match port {
            Some(port) => return (process, port),
            None if printed
                .lines()
                .iter()
                .any(|l| l.contains("port not available")) =>
            {
                continue;
            }
            None => panic!("chromedriver ended: {:?}", printed.lines()),
        }
    }
    panic!("chromedriver found no port free on both IPv4 and IPv6 in 10 tries");
}

impl Drop for DriverProcess {
    fn drop(&mut self) {
        let pid = self.child.id();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Chromium's helpers, orphaned by the kill, stay listed until the
        // system reaps them: wait (a bounded while) until the group is gone.
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_is_listed(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Whether any process, a zombie included, is still in process group `pgid`.
fn group_is_listed(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
            // After "pid (comm)": state, ppid, pgrp.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse::<u32>().ok())
                == Some(pgid)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::origin;

    #[test]
    fn an_origin_is_scheme_host_and_port() {
        assert_eq!(
            origin("http://127.0.0.1:4321/?fast=1#/play").as_deref(),
            Some("http://127.0.0.1:4321")
        );
        assert_eq!(origin("about:blank"), None);
        assert_eq!(origin("data:text/html,x"), None);
    }
}
