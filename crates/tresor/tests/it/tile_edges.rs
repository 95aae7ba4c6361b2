//! Issue 32, finding 11: a hash tile path whose index is near the C2SP
//! limit (2^56 tiles, whose first hash is near 2^64) overflowed into a
//! database look-up of hashes that cannot exist and answered 503 "the
//! database cannot be reached". Every such path is 404 `no such tile`, on
//! both databases, at every level, and the tiles that exist still answer.

use crate::common::trail::fetch_text;
use reqwest::StatusCode;

on_both!(tile_paths_at_the_edges_of_the_index_are_not_found, |app| {
    // A log with a checkpoint: the first writes sign one.
    let (status, body) = app.register("tiles").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, index) = app.get("/log/").await;
    assert_eq!(status, StatusCode::OK, "{index}");
    let log = &crate::common::items(&index["logs"], "logs")[0];
    let tiles = log["tiles"].as_str().unwrap().to_owned();
    assert!(tiles.ends_with("/tile/"), "{tiles}");
    let client = reqwest::Client::new();
    let get = |path: String| {
        let client = client.clone();
        let url = format!("{}{tiles}{path}", app.address);
        async move {
            let response = client.get(&url).send().await.unwrap();
            let status = response.status();
            (url, status, response.text().await.unwrap())
        }
    };
    // The first tile exists (partial): the route itself works.
    let note = fetch_text(&format!(
        "{}{}",
        app.address,
        log["checkpoint"].as_str().unwrap()
    ))
    .await;
    let size: u64 = note.lines().nth(1).unwrap().parse().unwrap();
    assert!((1..256).contains(&size), "{note}");
    let (url, status, text) = get(format!("0/000.p/{size}")).await;
    assert_eq!(status, StatusCode::OK, "{url}: {text}");

    let mut paths = Vec::new();
    for level in 0..8 {
        // 2^56 - 1, the largest index the spelling allows (the report's).
        paths.push(format!("{level}/x072/x057/x594/x037/x927/935"));
        paths.push(format!("{level}/x072/x057/x594/x037/x927/935.p/255"));
        paths.push(format!("{level}/x072/x057/x594/x037/x927/935.p/1"));
        // 2^56 - 2, whose last hash is still below 2^64.
        paths.push(format!("{level}/x072/x057/x594/x037/x927/934"));
        // 2^48, 2^56, 2^63, 2^64 - 1 and 2^64 (past u64).
        paths.push(format!("{level}/x281/x474/x976/x710/656"));
        paths.push(format!("{level}/x072/x057/x594/x037/x927/936"));
        paths.push(format!("{level}/x009/x223/x372/x036/x854/x775/808"));
        paths.push(format!("{level}/x018/x446/x744/x073/x709/x551/615"));
        paths.push(format!("{level}/x018/x446/x744/x073/x709/x551/616"));
        // Too many groups, with and without a value.
        paths.push(format!(
            "{level}/x000/x000/x000/x000/x000/x000/x000/x000/001"
        ));
        paths.push(format!("{level}/{}001", "x999/".repeat(40)));
    }
    for path in paths {
        let (url, status, text) = get(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{url}: {text}");
        assert!(text.starts_with("no such tile"), "{url}: {text}");
    }
    // And the server still answers as before.
    let (url, status, text) = get(format!("0/000.p/{size}")).await;
    assert_eq!(status, StatusCode::OK, "{url}: {text}");
});
