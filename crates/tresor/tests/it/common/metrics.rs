//! The one reader of a server's metrics: `GET /metrics` on its operator
//! listener (the OpenMetrics text), and the samples in it by series.

use std::collections::BTreeMap;

/// `GET {admin_base}/metrics`: the whole OpenMetrics text (a 200 that ends
/// with `# EOF`).
pub async fn scrape(admin_base: &str) -> String {
    let response = reqwest::get(format!("{admin_base}/metrics"))
        .await
        .expect("the operator listener answers");
    assert_eq!(response.status(), 200, "GET {admin_base}/metrics");
    let text = response.text().await.expect("the metrics' text");
    assert!(
        text.ends_with("# EOF\n"),
        "a whole OpenMetrics text: {text}"
    );
    text
}

/// Each sample of a scrape by its series (`name{labels}` as exported).
pub fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a sample line");
            (series.to_owned(), value.parse().expect("a number"))
        })
        .collect()
}

/// The value of one series of a scrape; fails, showing the scrape, when it
/// is missing.
pub fn value(text: &str, series: &str) -> f64 {
    *samples(text)
        .get(series)
        .unwrap_or_else(|| panic!("no series {series} in {text}"))
}

/// Scrapes `admin_base` and gives the value of one series.
pub async fn read(admin_base: &str, series: &str) -> f64 {
    value(&scrape(admin_base).await, series)
}
