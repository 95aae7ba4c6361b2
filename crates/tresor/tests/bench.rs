//! `tresor bench` end to end, briefly: it spawns its own servers, loads them
//! over HTTP and reports each run beside its baselines. It measures; this
//! test checks only that it runs and reports, never how fast.

mod common;

use common::{tresor, tresor_command};

/// Runs `tresor bench --spawn` briefly (two players, one second, no warm-up
/// and no extra block) with `args`, and checks that it succeeded; its report.
fn short_bench(args: &[&str]) -> String {
    let output = tresor_command()
        .args(["bench", "--spawn"])
        .args(args)
        .args([
            "--concurrency",
            "2",
            "--duration",
            "1",
            "--warmup",
            "0",
            "--extra-blocks",
            "0",
        ])
        .env("RUST_LOG", "error")
        .output()
        .expect("run tresor bench");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn a_short_bench_reports_purchases_beside_its_baselines() {
    let stdout = short_bench(&["--baselines", "--mix", "games"]);
    for expected in [
        "/healthz (HTTP ceiling)",
        "SQLite, group commit",
        "SQLite, one transaction per job",
        "games/s",
        "POST /api/plays ",
        "POST /api/plays/{id}/throws",
        "server memory: VmRSS",
        "group commit:",
    ] {
        assert!(
            stdout.contains(expected),
            "the report names {expected:?}:\n{stdout}"
        );
    }
    // Each SQLite run really bought units: its purchase line counts some.
    let purchases: Vec<u64> = stdout
        .lines()
        .filter(|line| line.trim_start().starts_with("POST /api/plays "))
        .map(|line| {
            let count = line
                .split_whitespace()
                .find_map(|word| word.strip_prefix("n="))
                .unwrap_or_else(|| panic!("a request count in {line:?}"));
            count.parse().expect("a number of requests")
        })
        .collect();
    assert_eq!(purchases.len(), 2, "one purchase line a run:\n{stdout}");
    assert!(
        purchases.iter().all(|&n| n > 0),
        "every run made purchases:\n{stdout}"
    );
}

#[test]
fn bench_needs_a_server_or_spawn() {
    let output = tresor(&["bench"]);
    assert_eq!(output.status.code(), Some(2), "a usage error");
}

#[test]
fn a_refusal_flood_is_refused_as_expected_and_named() {
    let stdout = short_bench(&["--mix", "purchases", "--refusals-per-second", "40"]);
    for expected in [
        "SQLite, group commit, refusal flood 40/s",
        "refused purchase (403)",
        "refused throw (409)",
        "0 throttled (429), 0 unexpected: every refusal as expected",
    ] {
        assert!(
            stdout.contains(expected),
            "the report names {expected:?}:\n{stdout}"
        );
    }
    assert!(!stdout.contains("errors)"), "no errors:\n{stdout}");
}
