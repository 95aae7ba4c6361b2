//! The one poll with a deadline: a test waits for the thing it needs (a
//! server answering, a file, a line printed, a row written), never a fixed
//! time. A check is tried at once, then every [`STEP`] until `within` has
//! passed; the test then fails naming what never came.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often a check is tried again.
pub const STEP: Duration = Duration::from_millis(20);

/// Waits until `check` gives `Some`, and gives it; panics naming `what`
/// once `within` has passed.
pub async fn until<T, F, Fut>(what: impl std::fmt::Display, within: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(STEP).await;
    }
}

/// [`until`] for a check that says yes or no.
pub async fn until_true<F, Fut>(what: impl std::fmt::Display, within: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    until(what, within, || {
        let answer = check();
        async move { answer.await.then_some(()) }
    })
    .await;
}

/// [`until`] off the runtime (a thread of its own, a blocking check).
pub fn until_blocking<T>(
    what: impl std::fmt::Display,
    within: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(STEP);
    }
}

/// Waits until `url` answers with a success (a server up, a route open).
pub async fn answers(url: &str, within: Duration) {
    until_true(format!("{url} answering"), within, || async move {
        reqwest::get(url)
            .await
            .is_ok_and(|r| r.status().is_success())
    })
    .await;
}
