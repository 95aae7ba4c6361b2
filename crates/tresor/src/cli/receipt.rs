//! `tresor audit receipt`: one play's receipt checked from outside, with
//! `logcheck` only: against a key the verifier pinned, and with `--log`
//! against what the site's `/log/` lists, as the fairness page checks it
//! (a retired key only up to the last size it signed of each log, every
//! listed witness's cosignature required): docs/AUDIT.md, "Checking a
//! receipt by hand".

use super::monitor::checked;
use super::{CheckFailed, Usage};
use crate::logcheck::{self, Listing, Receipt, VerifierKey, WitnessKey};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// `tresor audit receipt`.
#[derive(Debug, Args)]
pub struct ReceiptArgs {
    /// The receipt (JSON: a play's `receipt`, or the whole answer holding it).
    pub file: PathBuf,
    /// The installation's verifier key (`tresor/<id>+<key id>+<base64>`),
    /// as the fairness page and `/log/` publish it: the receipt's own `key`
    /// is never trusted alone. Without it, `--log` gives the keys (as the
    /// fairness page takes them).
    #[arg(long, required_unless_present = "log")]
    pub key: Option<String>,
    /// A witness that must have cosigned the receipt's checkpoint (its
    /// verifier key, `<name>+<key id>+<base64>`). May be given more than
    /// once: each must have.
    #[arg(long = "witness", value_name = "VKEY")]
    pub witnesses: Vec<String>,
    /// What the site's `/log/` lists: its URL (`https://…/log/`) or a file
    /// saved from it (a monitor's mirror keeps it as `index.json`). The
    /// receipt is then checked as the fairness page checks it: its key is
    /// one listed, a retired key's checkpoint is no larger than the last it
    /// signed of that log, and every witness listed cosigned it.
    #[arg(long, value_name = "URL|FILE")]
    pub log: Option<String>,
}

/// The receipt of `file` (the receipt, or an answer holding it).
fn read_receipt(file: &PathBuf) -> anyhow::Result<Receipt> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CheckFailed(format!("{}: not JSON ({e})", file.display())))?;
    let receipt = value.get("receipt").cloned().unwrap_or(value);
    Ok(serde_json::from_value(receipt)
        .map_err(|e| CheckFailed(format!("{}: not a receipt ({e})", file.display())))?)
}

/// `--log`: the listing fetched from the site or read from a file.
async fn read_listing(given: &str) -> anyhow::Result<Listing> {
    let text = if given.starts_with("https://") || given.starts_with("http://") {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?;
        let response = client
            .get(given)
            .send()
            .await
            .with_context(|| format!("cannot fetch {given}"))?;
        if !response.status().is_success() {
            anyhow::bail!("{given} answered {}", response.status());
        }
        response.text().await?
    } else {
        std::fs::read_to_string(given).with_context(|| format!("cannot read {given}"))?
    };
    Ok(serde_json::from_str(&text)
        .map_err(|e| CheckFailed(format!("{given}: not what /log/ lists ({e})")))?)
}

pub async fn run_receipt(args: ReceiptArgs) -> anyhow::Result<()> {
    let key = args
        .key
        .as_deref()
        .map(|k| VerifierKey::parse(k).map_err(|e| Usage(format!("--key: {e}"))))
        .transpose()?;
    let receipt = read_receipt(&args.file)?;
    let witnesses = args
        .witnesses
        .iter()
        .map(|w| WitnessKey::parse(w).map_err(|e| Usage(format!("--witness: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let listing = match &args.log {
        Some(given) => Some(read_listing(given).await?),
        None => None,
    };
    let (included, retired, cosigned) = match (&listing, &key) {
        (Some(listing), key) => {
            let verdict = listing
                .check_receipt(&receipt, key.as_ref())
                .map_err(checked)?;
            (verdict.included, verdict.retired, verdict.cosigned)
        }
        (None, Some(key)) => {
            let included = logcheck::check_receipt(&receipt, key).map_err(checked)?;
            (included, false, Vec::new())
        }
        (None, None) => return Err(Usage("give --key or --log".to_owned()).into()),
    };
    println!(
        "the receipt checks: record {} ({} by {}) is in the log {}, within its signed \
         checkpoint of {} records",
        included.index, receipt.record.action, receipt.record.actor, included.origin, included.size
    );
    if retired {
        println!(
            "signed with the key {}, retired since, within the last checkpoint it signed of \
             this log",
            receipt.key.trim()
        );
    }
    for (witness, time) in &cosigned {
        println!("cosigned by the witness {witness} (at {time}, Unix seconds)");
    }
    for witness in witnesses
        .iter()
        .filter(|w| !cosigned.iter().any(|(listed, _)| listed == w.as_str()))
    {
        let time = logcheck::check_cosigned(&receipt.checkpoint, witness).map_err(checked)?;
        println!(
            "cosigned by the witness {} (at {time}, Unix seconds)",
            witness.as_str()
        );
    }
    Ok(())
}
