//! The operator's metrics, alerts and dashboard (`docs/ops/`): a real
//! `tresor serve`'s `/metrics`, read on its operator listener after
//! purchases and failed logins, carries what they imply; every metric that
//! `docs/ops/alerts.yml` and `docs/ops/grafana-dashboard.json` name is
//! exported, and every metric exported is described in `docs/ops/README.md`,
//! so the documents cannot drift from the code; and, where `promtool` is
//! installed (Debian's `prometheus` package), the rules pass
//! `promtool check rules` and their unit tests (`docs/ops/alerts.test.yml`).
//! Without promtool those checks say they were skipped, unless
//! `TRESOR_REQUIRE_PROMTOOL=1`, where they fail instead.

use crate::common::metrics::{self, samples};
use crate::common::{Harness, Server, cookie_client, post, register_and_deposit};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

on_sqlite!(
    the_metrics_count_purchases_and_failed_logins_and_show_sales_readiness_and_the_queue,
    every_metric_the_alerts_and_the_dashboard_name_is_exported_and_documented,
);

/// The two tests that start a server take turns: two ports picked free at
/// once by two tests in one binary can be the same.
static ONE_SERVER_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn ops_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ops")
}

fn read_ops(name: &str) -> String {
    let path = ops_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ---- The scrape ----

/// `GET /metrics` on the server's operator listener: the OpenMetrics text.
async fn scrape(server: &Server) -> String {
    metrics::scrape(&server.admin_base).await
}

/// The value of one series; fails, showing the scrape, when it is missing.
fn value(samples: &BTreeMap<String, f64>, series: &str) -> f64 {
    *samples
        .get(series)
        .unwrap_or_else(|| panic!("no series {series} in {samples:#?}"))
}

/// The metric names a scrape has samples of (`tresor_writer_batch_seconds_bucket`…).
fn sample_names(text: &str) -> BTreeSet<String> {
    samples(text)
        .keys()
        .map(|series| series.split('{').next().unwrap().to_owned())
        .collect()
}

/// The metric families a scrape declares (`# TYPE tresor_purchases counter`
/// declares `tresor_purchases`, whose sample is `tresor_purchases_total`).
fn families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .map(|rest| rest.split(' ').next().unwrap().to_owned())
        .collect()
}

/// `POST /api/login` from `client`: the status and the error code, if any.
async fn login(
    client: &reqwest::Client,
    server: &Server,
    username: &str,
    password: &str,
) -> (u16, Value) {
    let (status, body) = post(
        client,
        &format!("{}/api/login", server.base),
        &json!({"username": username, "password": password}),
        None,
    )
    .await
    .expect("the server answers the login");
    (status, body["error"]["code"].clone())
}

async fn buy(client: &reqwest::Client, server: &Server, key: &str) -> u16 {
    let (status, body) = post(
        client,
        &format!("{}/api/plays", server.base),
        &json!({"stake_cents": 50}),
        Some(key),
    )
    .await
    .expect("the server answers the purchase");
    assert!(matches!(status, 200 | 201), "{status} {body}");
    status
}

async fn the_metrics_count_purchases_and_failed_logins_and_show_sales_readiness_and_the_queue(
    h: &Harness,
) {
    let _turn = ONE_SERVER_AT_A_TIME.lock().await;
    let server = h.server(&[]).await;
    let before = samples(&scrape(&server).await);
    for (series, expected) in [
        ("tresor_ready", 1.0),
        ("tresor_sales_open", 1.0),
        ("tresor_writer_queue_depth", 0.0),
        ("tresor_purchases_total", 0.0),
        (
            r#"tresor_failed_logins_total{outcome="invalid_credentials"}"#,
            0.0,
        ),
        (r#"tresor_failed_logins_total{outcome="rate_limited"}"#, 0.0),
    ] {
        assert_eq!(value(&before, series), expected, "{series} at start");
    }

    // Five purchases, and one of them sent again under its key: a replay,
    // not a purchase.
    let buyer = cookie_client();
    register_and_deposit(&buyer, &server.base, "buyer", 10_000).await;
    let mut statuses = BTreeMap::<u16, u32>::new();
    for n in 0..5 {
        *statuses
            .entry(buy(&buyer, &server, &format!("key-{n}")).await)
            .or_default() += 1;
    }
    *statuses
        .entry(buy(&buyer, &server, "key-0").await)
        .or_default() += 1;

    // Wrong passwords for a real name from one address until the pair is
    // made to wait (after 5 free failures; the waits double from 1 s, so a
    // refusal unchecked comes however slow the machine); one for a name
    // that does not exist; and a right one, which is no failure.
    let guesser = cookie_client();
    let mut refused = BTreeMap::<String, u32>::new();
    for _ in 0..30 {
        let (status, code) = login(&guesser, &server, "buyer", "not the password").await;
        let code = code.as_str().expect("an error code").to_owned();
        match code.as_str() {
            "invalid_credentials" => assert_eq!(status, 401),
            "rate_limited" => assert_eq!(status, 429),
            other => panic!("a login refused {status} {other}"),
        }
        *refused.entry(code.clone()).or_default() += 1;
        if code == "rate_limited" {
            break;
        }
    }
    assert!(
        refused.get("rate_limited") == Some(&1),
        "the guesser was made to wait: {refused:?}"
    );
    let (status, code) = login(&guesser, &server, "nobody-has-this-name", "a guess").await;
    assert_eq!((status, code), (401, json!("invalid_credentials")));
    *refused.entry("invalid_credentials".to_owned()).or_default() += 1;
    let owner = cookie_client();
    register_and_deposit(&owner, &server.base, "owner", 100).await;
    let (status, _) = login(&cookie_client(), &server, "owner", "a long password").await;
    assert_eq!(status, 200, "the right password logs in");

    let after = samples(&scrape(&server).await);
    assert_eq!(
        value(&after, "tresor_purchases_total"),
        5.0,
        "five purchases, the replay not counted"
    );
    for (outcome, count) in &refused {
        assert_eq!(
            value(
                &after,
                &format!(r#"tresor_failed_logins_total{{outcome="{outcome}"}}"#)
            ),
            f64::from(*count),
            "failed logins {outcome}: {refused:?}"
        );
    }
    for (status, count) in &statuses {
        let series = format!(
            r#"tresor_http_request_duration_seconds_count{{method="POST",route="/api/plays",status="{status}"}}"#
        );
        assert_eq!(value(&after, &series), f64::from(*count), "{series}");
    }
    // Every request was answered: nothing waits for the writer.
    assert_eq!(value(&after, "tresor_writer_queue_depth"), 0.0);
    assert_eq!(value(&after, "tresor_ready"), 1.0);
    assert_eq!(value(&after, "tresor_sales_open"), 1.0);
    // The batch durations are those of the committed batches, counted in
    // the batch sizes: at least the registrations, deposits, purchases and
    // logins' sessions.
    let batches = value(&after, "tresor_writer_batch_seconds_count");
    assert_eq!(batches, value(&after, "tresor_writer_batch_size_count"));
    assert!(batches >= 5.0 + 4.0, "{batches} batches");
    let seconds = value(&after, "tresor_writer_batch_seconds_sum");
    assert!(
        seconds > 0.0 && seconds < batches * 6.5,
        "{seconds} s in {batches} batches"
    );
    assert_eq!(
        value(&after, r#"tresor_writer_batch_seconds_bucket{le="+Inf"}"#),
        batches
    );

    // Sales set to open in the future are closed, at the next scrape; and
    // open again once the opening time is cleared.
    h.tresor_ok(&["sales", "open-at", "2099-01-01T00:00:00+01:00"]);
    let closed = samples(&scrape(&server).await);
    assert_eq!(
        value(&closed, "tresor_sales_open"),
        0.0,
        "the opening time is ahead"
    );
    assert_eq!(
        value(&closed, "tresor_ready"),
        1.0,
        "closed sales are no unreadiness"
    );
    h.tresor_ok(&["sales", "open-at", "--clear"]);
    let open = samples(&scrape(&server).await);
    assert_eq!(value(&open, "tresor_sales_open"), 1.0);
}

// ---- The documents against the scrape ----

/// The `tresor_…` metric names (and Prometheus's own `up`) a PromQL text
/// uses: identifiers, not function names or labels, since every metric of
/// Tresor starts with `tresor_`.
fn metric_names(promql: &str) -> BTreeSet<String> {
    promql
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|token| token.starts_with("tresor_"))
        .map(str::to_owned)
        .collect()
}

/// One rule of `alerts.yml`, read from its text: the file's own shape
/// (`- alert:` items with `expr`, `for`, `labels`, `annotations`), which
/// [`alert_rules`] checks as it reads.
#[derive(Debug)]
struct Rule {
    alert: String,
    expr: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The value of `key:` in a rule's lines: inline, or the block of lines
/// indented under it (`|`, `>-`).
fn field(lines: &[&str], key: &str) -> Option<String> {
    let at = lines
        .iter()
        .position(|line| line.trim_start().starts_with(&format!("{key}:")))?;
    let inline = lines[at].trim_start()[key.len() + 1..].trim();
    if !inline.is_empty() && inline != "|" && inline != ">-" {
        return Some(inline.trim_matches('"').to_owned());
    }
    let block: Vec<&str> = lines[at + 1..]
        .iter()
        .take_while(|line| line.trim().is_empty() || indent(line) > indent(lines[at]))
        .map(|line| line.trim())
        .collect();
    Some(block.join("\n").trim().to_owned())
}

/// `key: value` lines of a mapping block.
fn mapping(block: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let mut last: Option<String> = None;
    for line in block.lines() {
        match line
            .split_once(": ")
            .or_else(|| line.strip_suffix(':').map(|k| (k, "")))
        {
            Some((key, value)) if !key.contains(' ') => {
                let value = value.trim_matches('"').trim_start_matches(">-").trim();
                map.insert(key.to_owned(), value.to_owned());
                last = Some(key.to_owned());
            }
            _ => {
                // A folded value's next line.
                let key = last.clone().expect("a key before its folded lines");
                let entry = map.get_mut(&key).unwrap();
                entry.push(' ');
                entry.push_str(line);
            }
        }
    }
    map
}

fn alert_rules() -> Vec<Rule> {
    let text = read_ops("alerts.yml");
    assert!(text.contains("\ngroups:\n"), "a rule file's groups");
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_start().starts_with("- alert:"))
        .collect();
    assert!(!starts.is_empty(), "alerting rules");
    starts
        .iter()
        .enumerate()
        .map(|(n, &start)| {
            let end = starts.get(n + 1).copied().unwrap_or(lines.len());
            let mut chunk: Vec<&str> = lines[start..end].to_vec();
            chunk[0] = chunk[0].trim_start().trim_start_matches("- ");
            let rule = Rule {
                alert: field(&chunk, "alert").unwrap(),
                expr: field(&chunk, "expr").expect("every rule has an expr"),
                labels: mapping(&field(&chunk, "labels").expect("every rule has labels")),
                annotations: mapping(
                    &field(&chunk, "annotations").expect("every rule has annotations"),
                ),
            };
            assert!(!rule.expr.is_empty(), "{rule:?}");
            rule
        })
        .collect()
}

/// Every PromQL text of the dashboard: targets' `expr`, variables' queries.
fn dashboard_queries(dashboard: &Value) -> Vec<String> {
    fn walk(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("expr" | "definition" | "query", Value::String(text)) => {
                            found.push(text.clone())
                        }
                        _ => walk(value, found),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(dashboard, &mut found);
    found
}

fn dashboard() -> Value {
    serde_json::from_str(&read_ops("grafana-dashboard.json")).expect("the dashboard is JSON")
}

#[test]
fn the_alert_rules_have_the_issues_alerts_each_with_a_severity_a_summary_and_a_description() {
    let rules = alert_rules();
    let names: BTreeSet<&str> = rules.iter().map(|rule| rule.alert.as_str()).collect();
    for wanted in [
        "SalesStopped",
        "WriterQueueGrowing",
        "PurchaseP99High",
        "FailedLoginBurst",
        "ConsoleCodeGuessing",
        "NotReady",
        "WriterRestarting",
        "CommitsResolved",
    ] {
        assert!(names.contains(wanted), "alert {wanted} in {names:?}");
    }
    for rule in &rules {
        let severity = rule.labels.get("severity").map(String::as_str);
        assert!(
            matches!(severity, Some("critical" | "warning" | "info")),
            "{}: severity {severity:?}",
            rule.alert
        );
        for annotation in ["summary", "description"] {
            let text = rule.annotations.get(annotation).map(String::as_str);
            assert!(
                text.is_some_and(|t| t.len() > 20),
                "{}: {annotation} {text:?}",
                rule.alert
            );
        }
        // Each alert's runbook is in the README, under its name.
        assert!(
            read_ops("README.md").contains(&format!("### {}", rule.alert)),
            "{} has its section in docs/ops/README.md",
            rule.alert
        );
    }
    // The purchase's latency is the purchase route's: POST /api/plays.
    let p99 = rules.iter().find(|r| r.alert == "PurchaseP99High").unwrap();
    assert!(
        p99.expr.contains(r#"route="/api/plays",method="POST""#) && p99.expr.contains("> 0.05"),
        "{}",
        p99.expr
    );
}

#[test]
fn the_dashboard_is_importable_with_a_prometheus_input_and_has_the_issues_panels() {
    let dashboard = dashboard();
    assert!(dashboard["schemaVersion"].as_i64().unwrap() >= 36);
    assert!(
        dashboard["id"].is_null(),
        "no id: Grafana gives one on import"
    );
    let inputs = dashboard["__inputs"].as_array().unwrap();
    assert!(
        inputs
            .iter()
            .any(|i| i["name"] == "DS_PROMETHEUS" && i["pluginId"] == "prometheus"),
        "{inputs:?}"
    );
    let panels = dashboard["panels"].as_array().unwrap();
    let mut titles = Vec::new();
    let mut cells = BTreeSet::new();
    for panel in panels {
        let title = panel["title"].as_str().unwrap();
        titles.push(title.to_lowercase());
        let grid = &panel["gridPos"];
        let (x, y, w, h) = (
            grid["x"].as_u64().unwrap(),
            grid["y"].as_u64().unwrap(),
            grid["w"].as_u64().unwrap(),
            grid["h"].as_u64().unwrap(),
        );
        assert!(x + w <= 24, "{title} fits the 24 columns");
        for cx in x..x + w {
            for cy in y..y + h {
                assert!(
                    cells.insert((cx, cy)),
                    "{title} overlaps another panel at {cx},{cy}"
                );
            }
        }
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(panel["datasource"]["uid"], "${DS_PROMETHEUS}", "{title}");
        let targets = panel["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{title} has queries");
        for target in targets {
            assert_eq!(target["datasource"]["uid"], "${DS_PROMETHEUS}", "{title}");
        }
    }
    for wanted in [
        "purchases per second",
        "sales open",
        "purchase latency p50 / p99",
        "requests per second by route and status",
        "writer queue depth",
        "batch size",
        "batch duration",
        "failed logins",
        "readiness",
        "writer restarts",
    ] {
        assert!(
            titles.iter().any(|t| t.contains(wanted)),
            "a panel {wanted:?} in {titles:?}"
        );
    }
}

async fn every_metric_the_alerts_and_the_dashboard_name_is_exported_and_documented(h: &Harness) {
    // A purchase and a failed login, so that their labelled series exist.
    let _turn = ONE_SERVER_AT_A_TIME.lock().await;
    let server = h.server(&[]).await;
    let client = cookie_client();
    register_and_deposit(&client, &server.base, "buyer", 1_000).await;
    buy(&client, &server, "one").await;
    let (status, _) = login(&cookie_client(), &server, "buyer", "wrong").await;
    assert_eq!(status, 401);
    let text = scrape(&server).await;
    let exported = sample_names(&text);

    let mut used = BTreeMap::<String, String>::new();
    for rule in alert_rules() {
        for name in metric_names(&rule.expr) {
            used.insert(name, format!("alert {}", rule.alert));
        }
    }
    let dashboard = dashboard();
    for query in dashboard_queries(&dashboard) {
        for name in metric_names(&query) {
            used.entry(name)
                .or_insert_with(|| format!("dashboard: {query}"));
        }
    }
    for (name, user) in &used {
        assert!(
            exported.contains(name),
            "{name} (used by {user}) is not exported; exported: {exported:?}"
        );
    }
    // The new metrics are all used, and every family is documented.
    for name in [
        "tresor_purchases_total",
        "tresor_failed_logins_total",
        "tresor_console_code_failures_total",
        "tresor_ready",
        "tresor_sales_open",
        "tresor_writer_queue_depth",
        "tresor_writer_batch_seconds_bucket",
        "tresor_writer_batch_size_bucket",
        "tresor_writer_restarts_total",
        "tresor_writer_commits_resolved_total",
        "tresor_http_request_duration_seconds_bucket",
    ] {
        assert!(
            used.contains_key(name),
            "{name} is used by the alerts or the dashboard"
        );
    }
    let readme = read_ops("README.md");
    for family in families(&text) {
        assert!(
            readme.contains(&format!("`{family}")),
            "{family} is described in docs/ops/README.md"
        );
    }
}

// ---- promtool ----

/// Whether `promtool` runs; without it, the check is skipped unless
/// `TRESOR_REQUIRE_PROMTOOL=1`.
fn promtool_present() -> bool {
    if Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    assert!(
        std::env::var("TRESOR_REQUIRE_PROMTOOL").as_deref() != Ok("1"),
        "TRESOR_REQUIRE_PROMTOOL=1 but promtool is missing (apt-get install prometheus)"
    );
    eprintln!("promtool checks skipped: promtool is not installed");
    false
}

fn promtool(args: &[&str], dir: &Path) {
    let started = Instant::now();
    let output = Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run promtool");
    assert!(
        output.status.success(),
        "promtool {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // Measured, not asserted: a loaded machine may be slow.
    eprintln!(
        "promtool {args:?}: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// `alerts.yml` without its annotations: `promtool test rules` compares
/// them too, and the unit tests are about when alerts fire and with which
/// labels. The rule's other lines are kept as they are.
fn without_annotations(text: &str) -> String {
    let mut kept = Vec::new();
    let mut skipping: Option<usize> = None;
    for line in text.lines() {
        if let Some(at) = skipping {
            if line.trim().is_empty() || indent(line) > at {
                continue;
            }
            skipping = None;
        }
        if line.trim() == "annotations:" {
            skipping = Some(indent(line));
            continue;
        }
        kept.push(line);
    }
    kept.join("\n") + "\n"
}

#[test]
fn the_alert_rules_pass_promtool_check_and_their_unit_tests() {
    if !promtool_present() {
        return;
    }
    promtool(&["check", "rules", "alerts.yml"], &ops_dir());
    let dir = tempfile::tempdir().unwrap();
    let stripped = without_annotations(&read_ops("alerts.yml"));
    assert!(!stripped.contains("annotations:") && !stripped.contains("summary:"));
    assert_eq!(
        stripped.matches("- alert:").count(),
        alert_rules().len(),
        "every rule is kept"
    );
    std::fs::write(dir.path().join("alerts.yml"), stripped).unwrap();
    std::fs::write(
        dir.path().join("alerts.test.yml"),
        read_ops("alerts.test.yml"),
    )
    .unwrap();
    promtool(&["check", "rules", "alerts.yml"], dir.path());
    promtool(&["test", "rules", "alerts.test.yml"], dir.path());
}

#[test]
fn the_dashboards_queries_are_valid_promql() {
    if !promtool_present() {
        return;
    }
    // Each query as a recording rule, Grafana's variables given values.
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    let queries = dashboard_queries(&dashboard());
    for (n, query) in queries.iter().enumerate() {
        let query = query
            .replace("$__rate_interval", "5m")
            .replace("$instance", ".*");
        let query = if let Some(inner) = query.strip_prefix("label_values(") {
            // A variable's query: the metric it reads.
            inner.split(',').next().unwrap().to_owned()
        } else {
            query
        };
        rules.push_str(&format!(
            "      - record: dashboard_query_{n}\n        expr: {}\n",
            serde_json::to_string(&query).unwrap()
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dashboard.yml"), rules).unwrap();
    promtool(&["check", "rules", "dashboard.yml"], dir.path());
}

// ---- the systemd unit ----

/// `docs/ops/tresor.service` (issue 32, finding 6) raises the open files,
/// hardens the service, and passes `systemd-analyze verify` (with its
/// `ExecStart` pointed at the binary under test, which verify requires to
/// exist), without a single warning. Where systemd-analyze is missing the
/// check says it was skipped, unless `TRESOR_REQUIRE_SYSTEMD_ANALYZE=1`.
#[test]
fn the_systemd_unit_raises_the_open_files_is_hardened_and_verifies() {
    let unit = read_ops("tresor.service");
    for setting in [
        "LimitNOFILE=65536",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/tresor",
        "PrivateTmp=yes",
        "CapabilityBoundingSet=\n",
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
        "SystemCallFilter=@system-service",
        "UMask=0077",
        "ExecStart=/usr/local/bin/tresor serve ",
    ] {
        assert!(unit.contains(setting), "the unit sets {setting:?}");
    }
    // The server raises its own soft limit: setrlimit must stay allowed.
    assert!(
        unit.lines()
            .filter(|l| l.starts_with("SystemCallFilter="))
            .all(|l| !l.contains("@resources") && !l.contains("setrlimit")),
        "setrlimit is not filtered out"
    );
    let present = Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        assert!(
            std::env::var("TRESOR_REQUIRE_SYSTEMD_ANALYZE").as_deref() != Ok("1"),
            "TRESOR_REQUIRE_SYSTEMD_ANALYZE=1 but systemd-analyze is missing (apt-get install systemd)"
        );
        eprintln!("systemd-analyze verify skipped: systemd-analyze is not installed");
        return;
    }
    let binary = crate::common::tresor_command().get_program().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tresor.service");
    std::fs::write(
        &path,
        unit.replace(
            "/usr/local/bin/tresor",
            binary.to_str().expect("a UTF-8 path"),
        ),
    )
    .unwrap();
    let output = Command::new("systemd-analyze")
        .args(["verify", path.to_str().unwrap()])
        .output()
        .expect("run systemd-analyze");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "systemd-analyze verify: {said}");
    assert!(
        said.trim().is_empty(),
        "systemd-analyze verify says nothing: {said}"
    );
    // The check can fail: a misspelt setting is reported.
    std::fs::write(
        &path,
        std::fs::read_to_string(&path)
            .unwrap()
            .replace("Restart=on-failure", "Restart=on-failur"),
    )
    .unwrap();
    let output = Command::new("systemd-analyze")
        .args(["verify", path.to_str().unwrap()])
        .output()
        .expect("run systemd-analyze");
    assert!(
        !String::from_utf8_lossy(&output.stderr).trim().is_empty(),
        "a misspelt value is reported"
    );
}
