//! `tresor-bench` end to end, briefly: it spawns its own servers (the
//! `tresor` binary cargo builds beside it), loads them over HTTP and reports
//! each run beside its baselines. It measures; these tests check only that
//! it runs and reports, never how fast.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `tresor` binary the bench spawns: the one beside `tresor-bench`,
/// which `cargo test --workspace` builds with it (`cargo test -p
/// tresor-bench` alone does not: build `-p tresor` first).
fn tresor_exe() -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_tresor-bench")).with_file_name("tresor");
    assert!(
        exe.is_file(),
        "no tresor binary at {}: cargo build -p tresor (or cargo test --workspace)",
        exe.display()
    );
    exe
}

/// `tresor-bench`, with the `tresor` beside it whatever TRESOR_BIN says.
fn bench_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tresor-bench"));
    command.env_remove("TRESOR_BIN");
    command
}

/// `tresor-bench args`, run to its end.
fn bench(args: &[&str]) -> Output {
    bench_command()
        .args(args)
        .env("RUST_LOG", "error")
        .output()
        .expect("run tresor-bench")
}

/// Runs `tresor-bench --spawn` briefly (two players, one second, no warm-up
/// and no extra block) with `args`, and checks that it succeeded; its report.
fn short_bench(args: &[&str]) -> String {
    short_bench_in(args, None)
}

/// [`short_bench`] run from the folder `cwd` (where files it makes land).
fn short_bench_in(args: &[&str], cwd: Option<&std::path::Path>) -> String {
    tresor_exe();
    let mut command = bench_command();
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    command.arg("--spawn").args(args).args([
        "--concurrency",
        "2",
        "--duration",
        "1",
        "--warmup",
        "0",
    ]);
    if !args.contains(&"--extra-blocks") {
        command.args(["--extra-blocks", "0"]);
    }
    let output = command
        .env("RUST_LOG", "error")
        .output()
        .expect("run tresor-bench");
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
        // The server's CPU per game, from /proc (issue 34).
        "CPU per game (a purchase and four throws): server ",
        // Which binary was measured.
        &format!("servers: {}", tresor_exe().display()),
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
    assert_eq!(
        stdout
            .matches("ledger after the run: the balances sum to zero")
            .count(),
        2,
        "each run's ledger is checked:\n{stdout}"
    );
}

/// The PostgreSQL server the bench makes its databases on, or `None` (with
/// a skip line) when none answers and `TRESOR_REQUIRE_POSTGRES` is not `1`.
fn postgres_url() -> Option<String> {
    use sqlx::Connection;
    let url = std::env::var("TRESOR_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    match runtime.block_on(sqlx::PgConnection::connect(&url)) {
        Ok(_) => Some(url),
        Err(error) if std::env::var("TRESOR_REQUIRE_POSTGRES").as_deref() == Ok("1") => {
            panic!("PostgreSQL is required but unreachable at {url}: {error}")
        }
        Err(error) => {
            eprintln!("skipped: PostgreSQL unreachable at {url}: {error}");
            None
        }
    }
}

/// The count of purchases on the line of `label` (its `n=`), and that
/// line's purchases per second.
fn purchases_after(stdout: &str, label: &str) -> (u64, f64) {
    let mut lines = stdout.lines().skip_while(|line| !line.starts_with(label));
    let headline = lines
        .next()
        .unwrap_or_else(|| panic!("a line for {label:?}:\n{stdout}"));
    let rate: f64 = headline[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|word| word.parse().ok())
        .unwrap_or_else(|| panic!("a rate in {headline:?}"));
    let count = lines
        .find(|line| line.trim_start().starts_with("POST /api/plays "))
        .and_then(|line| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix("n="))
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a purchase count after {label:?}:\n{stdout}"));
    (count, rate)
}

#[test]
fn two_servers_on_postgres_report_each_and_their_sum_beside_one_behind_a_delay() {
    let Some(url) = postgres_url() else { return };
    let stdout = short_bench(&[
        "--database-url",
        &url,
        "--servers",
        "2",
        "--baselines",
        "--pg-delay-ms",
        "1",
    ]);
    let backend = "PostgreSQL +1 ms a round trip";
    for expected in [
        format!("{backend}, group commit"),
        format!("{backend}, one transaction per job"),
        "pgbench TPC-B-like".to_owned(),
        ", +1 ms a round trip)".to_owned(),
        format!("{backend}, server 1 of 2"),
        format!("{backend}, server 2 of 2"),
        format!("{backend}, 2 servers in all"),
        "2 servers: ".to_owned(),
        // PostgreSQL's CPU per purchase beside pgbench's per transaction,
        // in one run (issue 34).
        "CPU per purchase: server ".to_owned(),
        " µs, PostgreSQL ".to_owned(),
        "PostgreSQL CPU per pgbench transaction: ".to_owned(),
        "PostgreSQL's CPU: ".to_owned(),
        " µs a pgbench transaction = ".to_owned(),
        // Two servers' CPU per purchase against one's, PostgreSQL's counted
        // once for both (issue 34).
        "CPU per purchase, 2 servers vs one: server ".to_owned(),
    ] {
        assert!(
            stdout.contains(&expected),
            "the report names {expected:?}:\n{stdout}"
        );
    }
    // Both servers sold, and the sum counts what each did.
    let (first, first_rate) = purchases_after(&stdout, &format!("{backend}, server 1 of 2"));
    let (second, second_rate) = purchases_after(&stdout, &format!("{backend}, server 2 of 2"));
    let (sum, sum_rate) = purchases_after(&stdout, &format!("{backend}, 2 servers in all"));
    assert!(first > 0 && second > 0, "each server sold:\n{stdout}");
    assert_eq!(sum, first + second, "the sum counts both:\n{stdout}");
    assert!(
        first_rate > 0.0 && second_rate > 0.0 && sum_rate > 0.0,
        "every line has a rate:\n{stdout}"
    );
    // PostgreSQL's CPU is the machine's: never divided by one server's
    // purchases alone.
    for label in ["server 1 of 2", "server 2 of 2"] {
        let cpu = stdout
            .lines()
            .skip_while(|line| !line.contains(label))
            .find(|line| line.contains("CPU per purchase"))
            .unwrap_or_else(|| panic!("a CPU line under {label}:\n{stdout}"));
        assert!(!cpu.contains("PostgreSQL"), "{label}: {cpu}\n{stdout}");
    }
    // Every run's ledger was checked (one server, one per job, two servers).
    assert_eq!(
        stdout
            .matches("ledger after the run: the balances sum to zero")
            .count(),
        3,
        "each run's ledger is checked:\n{stdout}"
    );
    assert!(!stdout.contains("errors)"), "no errors:\n{stdout}");
}

#[test]
fn several_servers_and_a_delay_are_refused_on_sqlite_with_nothing_started() {
    // SQLite's servers cannot share a database, and no proxy stands before
    // a file: both are usage errors (exit 2), before anything starts.
    for args in [
        &["--spawn", "--servers", "2"][..],
        &["--spawn", "--pg-delay-ms", "1"][..],
        &["--spawn", "--servers", "0"][..],
    ] {
        let output = bench(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.stdout.is_empty(),
            "{args:?} starts nothing: {}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

#[test]
fn a_preloaded_database_verifies_as_the_writer_appends() {
    let cwd = tempfile::tempdir().expect("a folder");
    let data = cwd.path().join("data");
    let data_arg = data.display().to_string();
    // The preload's emission is closed: the server sells from one more
    // (the demo emission is made only with a database the server creates).
    let stdout = short_bench_in(
        &[
            "--data",
            &data_arg,
            "--preload-plays",
            "2000",
            "--extra-blocks",
            "1",
        ],
        Some(cwd.path()),
    );
    let (bought, _) = purchases_after(&stdout, "SQLite, group commit");
    assert!(
        bought > 0 && !stdout.contains("errors)"),
        "the server sold on the preloaded folder:\n{stdout}"
    );
    let verify = Command::new(tresor_exe())
        .current_dir(cwd.path())
        .args(["audit", "verify", "--data", &data_arg])
        .output()
        .expect("run tresor audit verify");
    assert!(
        verify.status.success(),
        "tresor audit verify after a preload: {}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    // The preload's 2,000 plays are there, each with its record.
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (plays, records): (i64, i64) = runtime.block_on(async {
        use sqlx::Connection;
        let url = format!("sqlite://{}", data.join("tresor.db").display());
        let mut conn = sqlx::SqliteConnection::connect(&url)
            .await
            .expect("the database");
        let plays =
            sqlx::query_scalar("SELECT COUNT(*) FROM plays WHERE idempotency_key LIKE 'preload-%'")
                .fetch_one(&mut conn)
                .await
                .expect("plays");
        let records = sqlx::query_scalar(
            "SELECT COUNT(*) FROM trail t JOIN logs l ON l.id = t.log_id \
             WHERE l.writer = 'preload' AND t.action = 'buy'",
        )
        .fetch_one(&mut conn)
        .await
        .expect("records");
        (plays, records)
    });
    assert_eq!(
        (plays, records),
        (2000, 2000),
        "a record per preloaded play"
    );
}

#[test]
fn bench_needs_a_server_or_spawn() {
    let output = bench(&[]);
    assert_eq!(output.status.code(), Some(2), "a usage error");
}

/// The servers are the `tresor` binary beside the bench, or the one named
/// by `--tresor`: a name that is no binary is refused before anything
/// starts, with what to do.
#[test]
fn a_missing_tresor_binary_is_named_before_anything_starts() {
    let output = bench(&["--spawn", "--tresor", "/nonexistent/tresor"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no tresor binary at /nonexistent/tresor")
            && stderr.contains("cargo build --release -p tresor"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing started");
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

/// `--games 20`: the spawned server sells the island and 19 generated
/// scratch games, each with its emission, and the players' purchases (the
/// island's) go on (BENCHMARKS.md compares the purchase's cost with 1 and
/// 20 games).
#[test]
fn a_bench_with_twenty_games_on_sale_runs_and_says_so() {
    let stdout = short_bench(&["--games", "20"]);
    assert!(
        stdout.contains("catalogue: 20 games, 20 on sale"),
        "{stdout}"
    );
    assert!(stdout.contains("POST /api/plays "), "{stdout}");
}
