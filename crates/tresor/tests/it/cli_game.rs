//! The game-core commands through the real binary: `block generate|verify`,
//! `scenario`, `simulate`, and one clear line with exit code 2 for bad input.

use crate::common::cli::{
    COUNTING, ZEROS, assert_refused, assert_says, block_generate, block_verify, simulate, stdout,
    succeeds,
};
use crate::common::{assert_exit, describe, tresor_command};
use sha2::{Digest, Sha256};
use std::process::Stdio;

/// The known answers pinned in docs/AUDIT.md: sha256 of the exact stdout of
/// `tresor block generate --secret … --stake 50`.
const GENERATE_SHA256_ZEROS: &str =
    "67ed517a6d2a115769e0a88a6c4351f38ce273eda0c9de934e9325342f8c38aa";
const GENERATE_SHA256_COUNTING: &str =
    "9dc6d4103932c8243600cb082c0b6c65066ca9a1b8eedbbee8848bc7ac2e3a54";

#[test]
fn block_generate_prints_the_commitment_then_every_level_and_matches_the_pinned_hash() {
    for (secret, pinned) in [
        (ZEROS, GENERATE_SHA256_ZEROS),
        (COUNTING, GENERATE_SHA256_COUNTING),
    ] {
        let output = block_generate(secret, "50", &[]);
        assert!(output.status.success(), "{}", describe(&output));
        let text = stdout(&output);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 450_001);
        assert_eq!(
            lines[0],
            hex::encode(Sha256::digest(hex::decode(secret).unwrap()))
        );
        assert_eq!(lines[1..].iter().filter(|l| **l == "1").count(), 1);
        assert_eq!(lines[1..].iter().filter(|l| **l == "0").count(), 330_396);
        assert_eq!(hex::encode(Sha256::digest(&output.stdout)), pinned);
    }
}

#[test]
fn block_generate_does_not_depend_on_the_stake() {
    // Each stake's block, generated for real (two refusals would compare
    // equal too): the levels are the unit's, not the prize's, so each is
    // the block pinned at 50 c.
    for stake in ["50", "100", "200"] {
        let output = block_generate(COUNTING, stake, &[]);
        assert_exit(&output, 0);
        assert_eq!(stdout(&output).lines().count(), 450_001, "at {stake}");
        assert_eq!(
            hex::encode(Sha256::digest(&output.stdout)),
            GENERATE_SHA256_COUNTING,
            "at {stake}"
        );
    }
}

#[test]
fn block_generate_into_a_closed_pipe_does_not_panic() {
    let mut child = tresor_command()
        .args(["block", "generate", "--secret", ZEROS, "--stake", "50"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // A reader that stops early (`| head`) is no error: exit 0, nothing said.
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "", "silence on stderr");
}

#[test]
fn block_verify_accepts_a_block_that_matches_its_commitment() {
    let commitment = hex::encode(Sha256::digest([0u8; 32]));
    let output = block_verify(ZEROS, &commitment, "100", &[]);
    assert_exit(&output, 0);
    assert!(stdout(&output).starts_with("OK"));
}

#[test]
fn block_verify_rejects_a_wrong_commitment_with_exit_code_one() {
    let output = block_verify(COUNTING, &"ab".repeat(32), "50", &[]);
    assert_exit(&output, 1);
    assert!(stdout(&output).contains("commitment"));
}

#[test]
fn scenario_prints_the_units_game_as_pretty_json() {
    let text = succeeds(&[
        "scenario", "--secret", COUNTING, "--stake", "200", "--index", "17",
    ]);
    assert!(text.contains("\n  \"outcome\""), "pretty-printed");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["throws"].as_array().unwrap().len(), 4);
    assert_eq!(json["chests"].as_array().unwrap().len(), 9);
    assert_eq!(json["map"]["width"], 14);
    let level = json["outcome"]["level"].as_u64().unwrap();
    let levels = succeeds(&["block", "generate", "--secret", COUNTING, "--stake", "200"]);
    assert_eq!(levels.lines().nth(1 + 17).unwrap(), level.to_string());
}

#[test]
fn simulate_reports_the_exact_table_for_every_block() {
    let text = simulate("50", "3", &[]);
    for block in 1..=3 {
        assert!(
            text.contains(&format!("block {block} (commitment"))
                && text
                    .lines()
                    .filter(|l| l.starts_with(&format!("block {block} ")))
                    .all(|l| l.contains("level counts equal the table")),
            "{text}"
        );
    }
    assert_says(
        &text,
        &[
            "blocks holding exactly the table: 3 of 3",
            "does not evaluate to the unit's level: 0",
            "= 70.0000 %",
            "chi-square",
        ],
    );
}

#[test]
fn bad_secrets_stakes_and_indexes_get_one_line_and_exit_code_two() {
    assert_refused(
        &["block", "generate", "--secret", "abc", "--stake", "50"],
        &["64 hexadecimal"],
    );
    assert_refused(
        &["block", "generate", "--secret", ZEROS, "--stake", "75"],
        &["stake"],
    );
    assert_refused(
        &[
            "block",
            "verify",
            "--secret",
            ZEROS,
            "--commitment",
            "xyz",
            "--stake",
            "50",
        ],
        &["--commitment"],
    );
    assert_refused(
        &[
            "scenario", "--secret", ZEROS, "--stake", "50", "--index", "450000",
        ],
        &["--index"],
    );
    assert_refused(
        &[
            "scenario",
            "--secret",
            &"g".repeat(64),
            "--stake",
            "50",
            "--index",
            "1",
        ],
        &["64 hexadecimal"],
    );
    assert_refused(
        &["scenario", "--secret", ZEROS, "--stake", "50"],
        &["required"],
    );
    assert_refused(
        &["simulate", "--stake", "50", "--blocks", "0"],
        &["--blocks"],
    );
    assert_refused(
        &["simulate", "--stake", "50", "--blocks", "1", "--seed", "zz"],
        &["--seed"],
    );
    assert_refused(&["block", "generate", "--secret", ZEROS], &["required"]);
}

/// A test definition of `tests/it/games/`.
fn test_game(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/games")
        .join(name)
}

/// « L'Ilot » (18 land squares) was accepted by a check that staged 256
/// sample seeds per level, yet unit 665 of the block of secret 0101…01 could
/// not be staged: `block verify` and `scenario` exited 101. The check now
/// proves room for every walk and refuses it, naming the walk; the commands
/// that read it refuse it as bad input.
#[test]
fn an_island_whose_walks_can_leave_no_room_for_the_chests_is_refused_everywhere() {
    let ilot = test_game("refused/ilot.toml");
    let ilot = ilot.to_str().unwrap();
    assert_refused(
        &["game", "check", ilot],
        &[
            "ilot.toml: line 27: [scene] the map has 18 land squares, and the walk from [",
            "nine land squares off the walk and the start",
        ],
    );

    let secret = "01".repeat(32);
    let definition = Sha256::digest(std::fs::read(ilot).unwrap());
    let commitment = hex::encode(Sha256::digest(
        [hex::decode(&secret).unwrap(), definition.to_vec()].concat(),
    ));
    let verify = [
        "block",
        "verify",
        "--game",
        ilot,
        "--secret",
        &secret,
        "--commitment",
        &commitment,
        "--stake",
        "100",
    ];
    assert_refused(&verify, &["[scene] the map has 18 land squares"]);
    let scenario = [
        "scenario", "--game", ilot, "--secret", &secret, "--stake", "100", "--index", "665",
    ];
    assert_refused(&scenario, &["[scene] the map has 18 land squares"]);
}

/// Finding 13: a stake at 75.0001 % read "pays back 75.00 % … above the cap
/// of 75.00 %". The refusal shows the digits that set it apart, and the
/// cents it is the ratio of.
#[test]
fn a_payout_just_above_the_cap_is_refused_with_the_digits_that_show_why() {
    let text = std::fs::read_to_string(test_game("petit-coffre.toml"))
        .unwrap()
        .replacen("prize_cents = 100_000", "prize_cents = 350_001", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("juste.toml");
    std::fs::write(&file, text).unwrap();
    assert_refused(
        &["game", "check", file.to_str().unwrap()],
        &[
            "[payout-cap] stake 500 cents pays back 75.0001 % of its sales (750001 cents of \
           prizes for 1000000 cents of sales), above the cap of 75.00 %",
        ],
    );
}
