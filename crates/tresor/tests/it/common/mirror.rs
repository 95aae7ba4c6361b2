//! A monitor's mirror of a log (`tresor audit watch --mirror`) read back,
//! copied and served as a site of its own: how the monitor's and the
//! witness's tests show them a forked or rewritten log, signed with the
//! tests' log key (which they hold, as a thief of the key would).

use super::rfc9162::{self as r, H};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The seed of the key every test server signs with.
pub fn log_seed() -> [u8; 32] {
    hex::decode(super::db::TEST_LOG_KEY)
        .unwrap()
        .try_into()
        .unwrap()
}

/// Copies the folder `from` (files and folders) to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The leaf hashes of a mirrored log (its level-0 tiles), and its body.
pub fn mirrored(mirror: &Path, key: &r::Vkey) -> (Vec<H>, r::Body) {
    let note = std::fs::read_to_string(mirror.join("server/checkpoint")).unwrap();
    let body = r::open_note(&note, key).expect("the mirror's checkpoint verifies");
    let mut leaves = Vec::new();
    for k in 0..body.size.div_ceil(256) {
        let width = (body.size - k * 256).min(256);
        let bytes = std::fs::read(mirror.join("server").join(r::tile_path(0, k, width))).unwrap();
        leaves.extend(bytes.chunks(32).map(|c| <H>::try_from(c).unwrap()));
    }
    assert_eq!(
        r::mth(&leaves),
        body.root,
        "the mirror's tiles hash to its checkpoint"
    );
    (leaves, body)
}

/// A folder laid out as a mirror, served over HTTP by the test.
pub struct Site {
    pub base: String,
    /// The `POST`s it was sent (a witness's cosignatures).
    posts: Arc<AtomicUsize>,
}

impl Site {
    /// How many `POST`s the site was sent.
    pub fn posts(&self) -> usize {
        self.posts.load(Ordering::SeqCst)
    }
}

/// Serves `folder`: `GET /log/` is its `index.json`, `GET /log/<path>`
/// its `<path>`. A `POST` is counted and, with `forward_to` (a real
/// server's base), passed on to it with its answer given back; without,
/// answered 404.
pub async fn serve_folder(folder: PathBuf, forward_to: Option<String>) -> Site {
    use axum::extract::Request;
    use axum::http::{Method, StatusCode};
    use axum::response::IntoResponse;
    let posts = Arc::new(AtomicUsize::new(0));
    let counted = posts.clone();
    let app = axum::Router::new().fallback(move |request: Request| {
        let (folder, counted, forward_to) = (folder.clone(), counted.clone(), forward_to.clone());
        async move {
            let path = request.uri().path().to_owned();
            if request.method() == Method::POST {
                counted.fetch_add(1, Ordering::SeqCst);
                let Some(base) = forward_to else {
                    return StatusCode::NOT_FOUND.into_response();
                };
                let body = axum::body::to_bytes(request.into_body(), 1 << 16)
                    .await
                    .unwrap();
                let answer = reqwest::Client::new()
                    .post(format!("{base}{path}"))
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let status = StatusCode::from_u16(answer.status().as_u16()).unwrap();
                return (status, answer.bytes().await.unwrap()).into_response();
            }
            let Some(rest) = path.strip_prefix("/log/") else {
                return StatusCode::NOT_FOUND.into_response();
            };
            let file = if rest.is_empty() {
                folder.join("index.json")
            } else {
                folder.join(rest)
            };
            match std::fs::read(file) {
                Ok(bytes) => bytes.into_response(),
                Err(_) => StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Site { base, posts }
}
