//! Checks from outside the installation, with what it published and no
//! access to its database (one play's receipt: `receipt.rs`): `tresor
//! audit watch` (the monitor: every log's checkpoint,
//! its signature under the pinned key, a consistency proof from the last
//! checkpoint kept, built from the published tiles; optionally a mirror of
//! the tiles; optionally cosigning, as a witness, each checkpoint it
//! checked). docs/AUDIT.md says what a monitor keeps.

use super::{CheckFailed, Usage};
use crate::logcheck::{self, CheckError, Needs, SignedCheckpoint, TileStore, VerifierKey, Witness};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tlog_tiles::Tile;

/// `tresor audit witness-keygen`.
#[derive(Debug, Args)]
pub struct WitnessKeygenArgs {
    /// The new key's file (64 hex digits, made 0600, never overwritten).
    #[arg(long)]
    pub to: PathBuf,
    /// The witness's name in its verifier key and cosignatures (no spaces,
    /// no `+`), e.g. `witness.example.org/tresor`.
    #[arg(long)]
    pub name: String,
}

/// `tresor audit watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The site (`https://…`), whose `/log/` is read.
    #[arg(long)]
    pub url: String,
    /// Where the monitor keeps the pinned key and the last checkpoint of
    /// each log (made if missing; keep it).
    #[arg(long)]
    pub state: PathBuf,
    /// Pin this verifier key (else the site's key is pinned on the first
    /// run). Given later, it must be the pinned key, or replaces it after a
    /// rotation you checked (`log_key_rotated`).
    #[arg(long)]
    pub key: Option<String>,
    /// Copy every tile and checkpoint checked into this folder (the
    /// external copy of the safe), laid out as the site serves them.
    #[arg(long)]
    pub mirror: Option<PathBuf>,
    /// Seconds between two polls.
    #[arg(long, default_value_t = 60)]
    pub every: u64,
    /// Poll once and exit.
    #[arg(long)]
    pub once: bool,
    /// Be a witness: cosign each checkpoint checked with this key (a file
    /// of 64 hex digits, `tresor audit witness-keygen`) and send the
    /// cosignature to the site (`POST /log/<writer>/cosignature`).
    #[arg(long, requires = "witness_name", value_name = "FILE")]
    pub witness_key: Option<PathBuf>,
    /// The witness's name (as in its verifier key).
    #[arg(long, requires = "witness_key", value_name = "NAME")]
    pub witness_name: Option<String>,
}

pub(super) fn checked(error: CheckError) -> anyhow::Error {
    CheckFailed(error.0).into()
}

pub fn run_witness_keygen(args: WitnessKeygenArgs) -> anyhow::Result<()> {
    let seed = crate::logkey::LogSeed::generate();
    let witness =
        Witness::new(&args.name, seed.as_bytes()).map_err(|e| Usage(format!("--name: {e}")))?;
    crate::logkey::write_key_file(&args.to, &seed).map_err(Usage)?;
    println!("{}", witness.vkey().as_str());
    Ok(())
}

/// The witness of `--witness-key` and `--witness-name`, if given.
fn load_witness(args: &WatchArgs) -> anyhow::Result<Option<Witness>> {
    let (Some(path), Some(name)) = (&args.witness_key, &args.witness_name) else {
        return Ok(None);
    };
    let seed = crate::logkey::LogKeySource::File(path.clone())
        .load()
        .map_err(Usage)?
        .ok_or_else(|| Usage(format!("--witness-key: no key at {}", path.display())))?;
    let witness =
        Witness::new(name, seed.as_bytes()).map_err(|e| Usage(format!("--witness-name: {e}")))?;
    Ok(Some(witness))
}

/// Cosigns a checkpoint the monitor checked and sends the cosignature to
/// the site; an error when the site refuses it.
async fn cosign(
    site: &Site,
    witness: &Witness,
    writer: &str,
    checkpoint: &SignedCheckpoint,
) -> anyhow::Result<()> {
    let (body, _) = logcheck::split_note(&checkpoint.note).map_err(checked)?;
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let line = witness.cosign(&body, time);
    let url = format!("{}/log/{writer}/cosignature", site.base);
    let response = site
        .client
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(serde_json::json!({ "size": checkpoint.size, "cosignature": line }).to_string())
        .send()
        .await
        .with_context(|| format!("cannot send the cosignature to {url}"))?;
    if !response.status().is_success() {
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        anyhow::bail!("{url} refused the cosignature ({status}): {}", text.trim());
    }
    Ok(())
}

/// What the monitor fetches from: the site's `/log/`.
struct Site {
    client: reqwest::Client,
    base: String,
}

impl Site {
    async fn get(&self, path: &str) -> anyhow::Result<Option<Vec<u8>>> {
        let url = format!("{}{path}", self.base);
        let response = self
            .client
            .get(&url)
            .send()
            .await
            .with_context(|| format!("cannot fetch {url}"))?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status().is_success() {
            anyhow::bail!("{url} answered {}", response.status());
        }
        Ok(Some(response.bytes().await?.to_vec()))
    }

    async fn tile(&self, writer: &str, tile: &Tile) -> anyhow::Result<Vec<u8>> {
        let path = format!("/log/{writer}/{}", logcheck::tile_path(tile));
        let data = self.get(&path).await?.ok_or_else(|| {
            CheckFailed(format!(
                "the site does not publish the tile {path} its checkpoint covers"
            ))
        })?;
        if data.len() != tile.width() as usize * 32 {
            return Err(CheckFailed(format!(
                "the tile {path} is {} bytes, not {} hashes",
                data.len(),
                tile.width()
            ))
            .into());
        }
        Ok(data)
    }
}

/// A writer's name as a file name: what `--writer` takes, nothing else.
fn safe_writer(writer: &str) -> anyhow::Result<&str> {
    let ok = !writer.is_empty()
        && writer.len() <= 64
        && !writer.starts_with('.')
        && writer
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(writer)
    } else {
        Err(CheckFailed(format!(
            "the site lists a log with an unusable writer name: {writer:?}"
        ))
        .into())
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let partial = path.with_extension("partial");
    std::fs::write(&partial, bytes)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::rename(&partial, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Runs `f` over the tiles of `(size, root)`, fetching what it needs.
async fn with_tiles<T>(
    site: &Site,
    writer: &str,
    store: &mut TileStore,
    mut f: impl FnMut(&TileStore) -> Result<Needs<T>, CheckError>,
) -> anyhow::Result<T> {
    for _ in 0..16 {
        match f(store).map_err(checked)? {
            Needs::Done(value) => return Ok(value),
            Needs::Tiles(tiles) => {
                for tile in tiles {
                    let data = site.tile(writer, &tile).await?;
                    store.tiles.insert(tile, data);
                }
            }
        }
    }
    anyhow::bail!("the tiles needed never came together")
}

/// One log's poll: the new checkpoint against the kept one.
async fn poll_log(
    site: &Site,
    args: &WatchArgs,
    key: &VerifierKey,
    writer: &str,
    origin: &str,
) -> anyhow::Result<(String, SignedCheckpoint)> {
    let (note, new) = served_checkpoint(site, key, writer, origin).await?;
    let kept_path = args.state.join(format!("{writer}.checkpoint"));
    let kept = kept_checkpoint(&kept_path, key)?;
    let mut store = TileStore::default();
    let log = Polled {
        site,
        args,
        writer,
        origin,
    };
    let verdict = log
        .compare(&new, kept.as_ref(), &kept_path, &mut store)
        .await?;
    if let Some(mirror) = &args.mirror {
        mirror_log(site, mirror, writer, key, &new, &mut store).await?;
    }
    if kept.as_ref().is_none_or(|old| old.size != new.size) {
        if let Some(old) = &kept {
            // The kept ones, in order: evidence if the site turns on them.
            let history = args.state.join(format!("{writer}.{}.checkpoint", old.size));
            write_atomic(&history, old.note.as_bytes())?;
        }
        write_atomic(&kept_path, note.as_bytes())?;
    }
    Ok((verdict, new))
}

/// The checkpoint the site serves for the log `origin`, its signature
/// checked: its text and what it says.
async fn served_checkpoint(
    site: &Site,
    key: &VerifierKey,
    writer: &str,
    origin: &str,
) -> anyhow::Result<(String, SignedCheckpoint)> {
    let note = site
        .get(&format!("/log/{writer}/checkpoint"))
        .await?
        .ok_or_else(|| CheckFailed(format!("the log {origin} has no checkpoint")))?;
    let note = String::from_utf8(note)
        .map_err(|_| CheckFailed(format!("the checkpoint of {origin} is not text")))?;
    let new = logcheck::open_checkpoint(&note, key)
        .map_err(|e| CheckFailed(format!("log {origin}: {}", e.0)))?;
    if new.origin != origin {
        return Err(CheckFailed(format!(
            "the checkpoint served for {origin} is of another log, {}",
            new.origin
        ))
        .into());
    }
    Ok((note, new))
}

/// The checkpoint kept at `kept_path`, if any.
fn kept_checkpoint(
    kept_path: &std::path::Path,
    key: &VerifierKey,
) -> anyhow::Result<Option<SignedCheckpoint>> {
    Ok(match std::fs::read_to_string(kept_path) {
        Ok(text) => Some(
            logcheck::open_checkpoint(&text, key)
                .or_else(|_| kept_unsigned(&text))
                .map_err(|e| CheckFailed(format!("{}: {}", kept_path.display(), e.0)))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).context(format!("cannot read {}", kept_path.display())),
    })
}

/// The log a poll is about.
struct Polled<'a> {
    site: &'a Site,
    args: &'a WatchArgs,
    writer: &'a str,
    origin: &'a str,
}

impl Polled<'_> {
    /// The new checkpoint against the kept one (none: the tiles must hash
    /// to its root): what the watch says of it, or why it fails.
    async fn compare(
        &self,
        new: &SignedCheckpoint,
        kept: Option<&SignedCheckpoint>,
        kept_path: &std::path::Path,
        store: &mut TileStore,
    ) -> anyhow::Result<String> {
        let (site, args, writer, origin) = (self.site, self.args, self.writer, self.origin);
        Ok(match kept {
            None => {
                // Nothing kept yet: the tiles must still hash to the root.
                with_tiles(site, writer, store, |s| {
                    logcheck::over_tiles(s, new.size, new.root, |r| {
                        tlog_tiles::tree_hash(new.size, r)
                    })
                    .map(|n| match n {
                        Needs::Done(_) => Needs::Done(()),
                        Needs::Tiles(t) => Needs::Tiles(t),
                    })
                })
                .await
                .map_err(|e| anyhow::anyhow!("log {origin}: {e:#}"))?;
                format!("{} records, first checkpoint kept", new.size)
            }
            Some(old) if new.size < old.size => {
                return Err(CheckFailed(format!(
                    "log {origin} shrank: the site's checkpoint has {} records, the one kept \
                 has {} (a rollback or a rewrite); kept {}",
                    new.size,
                    old.size,
                    kept_path.display()
                ))
                .into());
            }
            Some(old) if new.size == old.size && new.root != old.root => {
                return Err(CheckFailed(format!(
                    "log {origin} forked: two signed checkpoints of {} records with different \
                 roots ({} kept, {} now); both are evidence, kept in {}",
                    new.size,
                    logcheck::base64_hash(&old.root),
                    logcheck::base64_hash(&new.root),
                    args.state.display()
                ))
                .into());
            }
            Some(old) => {
                with_tiles(site, writer, store, |s| {
                    logcheck::check_consistency(s, old.size, old.root, new.size, new.root)
                })
                .await
                .map_err(|e| {
                    if e.downcast_ref::<CheckFailed>().is_some() {
                        CheckFailed(format!("log {origin}: {e:#}")).into()
                    } else {
                        e
                    }
                })?;
                if new.size == old.size {
                    format!("{} records, unchanged", new.size)
                } else {
                    format!(
                        "{} records, consistent with the {} kept (+{})",
                        new.size,
                        old.size,
                        new.size - old.size
                    )
                }
            }
        })
    }
}

/// A kept checkpoint the pinned key does not verify (kept under a key
/// replaced since): its body is still the tree it described.
fn kept_unsigned(text: &str) -> Result<SignedCheckpoint, CheckError> {
    let body = text
        .split_once("\n\n")
        .map(|(b, _)| format!("{b}\n"))
        .ok_or_else(|| CheckError("not a signed note".to_owned()))?;
    let checkpoint = tlog_tiles::Checkpoint::from_bytes(body.as_bytes())
        .map_err(|_| CheckError("not a checkpoint".to_owned()))?;
    Ok(SignedCheckpoint::of(&checkpoint, text))
}

/// Copies the tiles new since the mirror's checkpoint, each read through
/// the reader authenticated by the new root, then the checkpoint.
async fn mirror_log(
    site: &Site,
    mirror: &Path,
    writer: &str,
    key: &VerifierKey,
    new: &SignedCheckpoint,
    store: &mut TileStore,
) -> anyhow::Result<()> {
    let folder = mirror.join(writer);
    let checkpoint_path = folder.join("checkpoint");
    let mirrored = std::fs::read_to_string(&checkpoint_path)
        .ok()
        .and_then(|text| logcheck::open_checkpoint(&text, key).ok())
        .filter(|c| c.size <= new.size)
        .map_or(0, |c| c.size);
    for tile in Tile::new_tiles(logcheck::TILE_HEIGHT, mirrored, new.size) {
        let data = with_tiles(site, writer, store, |s| {
            logcheck::authenticated_tile(s, new.size, new.root, &tile)
        })
        .await?;
        write_atomic(&folder.join(logcheck::tile_path(&tile)), &data)?;
    }
    write_atomic(&checkpoint_path, new.note.as_bytes())
}

/// One poll of every log the site lists.
async fn poll(site: &Site, args: &WatchArgs, witness: Option<&Witness>) -> anyhow::Result<()> {
    let index = site
        .get("/log/")
        .await?
        .ok_or_else(|| CheckFailed(format!("{}/log/ is not there", site.base)))?;
    let index: serde_json::Value = serde_json::from_slice(&index)
        .map_err(|e| CheckFailed(format!("{}/log/ is not JSON ({e})", site.base)))?;
    std::fs::create_dir_all(&args.state)
        .with_context(|| format!("cannot create {}", args.state.display()))?;
    let key_path = args.state.join("key");
    let pinned = match std::fs::read_to_string(&key_path) {
        Ok(text) => Some(text.trim().to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).context(format!("cannot read {}", key_path.display())),
    };
    let key_text = match (&args.key, pinned) {
        (Some(given), _) => given.trim().to_owned(),
        (None, Some(pinned)) => pinned,
        (None, None) => index["key"]
            .as_str()
            .ok_or_else(|| CheckFailed(format!("{}/log/ names no key", site.base)))?
            .to_owned(),
    };
    let key = VerifierKey::parse(&key_text).map_err(|e| Usage(format!("--key: {e}")))?;
    write_atomic(&key_path, format!("{}\n", key.as_str()).as_bytes())?;
    let logs = index["logs"].as_array().cloned().unwrap_or_default();
    if let Some(mirror) = &args.mirror {
        write_atomic(
            &mirror.join("index.json"),
            &serde_json::to_vec_pretty(&index)?,
        )?;
    }
    let mut seen = Vec::new();
    for log in &logs {
        let writer = safe_writer(log["writer"].as_str().unwrap_or_default())?;
        let origin = log["origin"].as_str().unwrap_or_default();
        let (verdict, checked) = poll_log(site, args, &key, writer, origin).await?;
        println!("log {origin}: {verdict}, signed by {}", key.as_str());
        if let Some(witness) = witness {
            cosign(site, witness, writer, &checked).await?;
            println!(
                "log {origin}: cosigned at {} records as the witness {}",
                checked.size,
                witness.vkey().as_str()
            );
        }
        seen.push(writer.to_owned());
    }
    // A log kept before and no longer listed is a log withdrawn.
    for entry in std::fs::read_dir(&args.state)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(writer) = name.strip_suffix(".checkpoint")
            && !writer.contains('.')
            && !seen.iter().any(|w| w == writer)
        {
            return Err(CheckFailed(format!(
                "the log of writer {writer} kept in {} is no longer listed by {}/log/",
                args.state.display(),
                site.base
            ))
            .into());
        }
    }
    Ok(())
}

pub async fn run_watch(args: WatchArgs) -> anyhow::Result<()> {
    let base = args.url.trim_end_matches('/').to_owned();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(Usage(format!("--url: not an http(s) URL: {}", args.url)).into());
    }
    let witness = load_witness(&args)?;
    let site = Site {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?,
        base,
    };
    loop {
        poll(&site, &args, witness.as_ref()).await?;
        if args.once {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(args.every.max(1))).await;
    }
}
