//! axe-core, the accessibility engine (the npm package, installed by
//! `.ci/run` as Chromium is), run inside the real page: WCAG 2.1 A and AA
//! rules. A test fails on a serious or critical finding. Without the package
//! a test says it was skipped, unless `TRESOR_REQUIRE_BROWSER=1` (as in CI).

use super::browser::Browser;
use serde_json::Value;
use std::path::PathBuf;

/// Where `axe.min.js` is: `TRESOR_AXE_JS`, else where `.ci/run` installs it
/// (`npm install --prefix ~/.cache/tresor-axe axe-core`).
fn axe_path() -> PathBuf {
    if let Some(path) = std::env::var_os("TRESOR_AXE_JS") {
        return PathBuf::from(path);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/tresor-axe/node_modules/axe-core/axe.min.js")
}

/// axe-core's source, or `None` when the checks must be skipped.
pub fn axe_source() -> Option<String> {
    let path = axe_path();
    match std::fs::read_to_string(&path) {
        Ok(source) => Some(source),
        Err(error) => {
            assert!(
                std::env::var("TRESOR_REQUIRE_BROWSER").as_deref() != Ok("1"),
                "TRESOR_REQUIRE_BROWSER=1 but axe-core is missing at {} ({error}): \
                 npm install --prefix ~/.cache/tresor-axe axe-core",
                path.display()
            );
            eprintln!(
                "accessibility checks skipped: no axe-core at {}",
                path.display()
            );
            None
        }
    }
}

/// One finding, as a test prints it.
fn describe(violation: &Value) -> String {
    let nodes: Vec<String> = violation["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .take(4)
        .map(|node| {
            format!(
                "{} — {}",
                node["target"],
                node["failureSummary"]
                    .as_str()
                    .unwrap_or_default()
                    .replace('\n', " ")
            )
        })
        .collect();
    format!(
        "[{}] {}: {} ({} elements) {}",
        violation["impact"].as_str().unwrap_or("?"),
        violation["id"].as_str().unwrap_or("?"),
        violation["help"].as_str().unwrap_or("?"),
        violation["nodes"].as_array().map_or(0, Vec::len),
        nodes.join(" | ")
    )
}

impl Browser {
    /// Runs axe-core on the page as it is now and returns its serious and
    /// critical findings (WCAG 2.0/2.1, levels A and AA), described.
    pub async fn axe_findings(&self, source: &str) -> Vec<String> {
        let loaded = self.execute("return typeof window.axe === 'object'").await;
        if loaded != Value::Bool(true) {
            self.execute(&format!("{source}\n;return true;")).await;
        }
        let result = self
            .in_page(
                "window.axe.run(document, {
                   runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
                   resultTypes: ['violations'],
                 }).then((r) => done(r.violations), (e) => done(String(e)));",
            )
            .await;
        let violations = result
            .as_array()
            .unwrap_or_else(|| panic!("axe-core failed: {result}"));
        violations
            .iter()
            .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
            .map(describe)
            .collect()
    }

    /// [`Browser::assert_accessible`] with the axe-core that `.ci/run`
    /// installs; said skipped without it (unless required, as in CI).
    pub async fn assert_accessible_if_axe(&self, screen: &str) {
        if let Some(source) = axe_source() {
            self.assert_accessible(&source, screen).await;
        }
    }

    /// Fails, naming `screen`, on any serious or critical finding.
    pub async fn assert_accessible(&self, source: &str, screen: &str) {
        assert_no_findings(&self.axe_findings(source).await, screen);
    }
}

/// Fails on any of `findings` (axe-core's, described), naming what was
/// checked (`checked`) and listing them, one a line.
pub fn assert_no_findings(findings: &[String], checked: &str) {
    assert!(
        findings.is_empty(),
        "{} serious or critical accessibility findings in {checked}:\n  {}",
        findings.len(),
        findings.join("\n  ")
    );
}
