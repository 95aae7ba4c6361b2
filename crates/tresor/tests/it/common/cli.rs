//! The game commands of the `tresor` binary as the tests run them (`block
//! generate|verify`, `scenario`, `simulate`, `game check`): what must
//! succeed, what must be refused as bad input, and what a report must say.

use super::{describe, tresor};
use std::process::Output;

/// Block secrets with known answers (docs/AUDIT.md).
pub const ZEROS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
pub const COUNTING: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/// Asserts `output` is a command's that exited `code` (what it printed
/// said if not).
#[track_caller]
pub fn assert_exit(output: &Output, code: i32) {
    assert_eq!(output.status.code(), Some(code), "{}", describe(output));
}

/// A command's stdout, which must be UTF-8.
pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

/// Runs `tresor args`, which must exit 0; its stdout.
pub fn succeeds(args: &[&str]) -> String {
    let output = tresor(args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{args:?}: {}",
        describe(&output)
    );
    stdout(&output)
}

/// Asserts `tresor args` is refused as bad input: exit 2, one line on
/// stderr holding each of `words`, and no panic.
pub fn assert_refused(args: &[&str], words: &[&str]) {
    let output = tresor(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{args:?}: {}",
        describe(&output)
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    for word in words {
        assert!(stderr.contains(word), "{stderr} does not say {word:?}");
    }
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
}

/// Asserts `text` says each of `pieces`.
pub fn assert_says(text: &str, pieces: &[&str]) {
    for piece in pieces {
        assert!(text.contains(piece), "{text}\ndoes not say {piece:?}");
    }
}

/// `tresor block generate` of the block of `secret` at `stake`, then `extra`.
pub fn block_generate(secret: &str, stake: &str, extra: &[&str]) -> Output {
    let mut args = vec!["block", "generate", "--secret", secret, "--stake", stake];
    args.extend(extra);
    tresor(&args)
}

/// `tresor block verify` of the block of `secret` against `commitment` at
/// `stake`, then `extra` (`--game FILE`).
pub fn block_verify(secret: &str, commitment: &str, stake: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "block",
        "verify",
        "--secret",
        secret,
        "--commitment",
        commitment,
        "--stake",
        stake,
    ];
    args.extend(extra);
    tresor(&args)
}

/// `tresor simulate` of `blocks` blocks at `stake`, then `extra`, which
/// must succeed: its report.
pub fn simulate(stake: &str, blocks: &str, extra: &[&str]) -> String {
    let mut args = vec!["simulate", "--stake", stake, "--blocks", blocks];
    args.extend(extra);
    succeeds(&args)
}
