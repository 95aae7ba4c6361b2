//! The catalogue (issue 36): game definition files checked by `tresor game
//! check`, each refusal one line naming the file, the line and the rule; the
//! island from its file exactly as built in; other games' blocks generated,
//! verified against their definition and simulated with `--game FILE`; and a
//! third game that is only a file (`games/pieces-d-or.toml` here).

mod browser;

use crate::common::assert_exit;
use crate::common::cli::{
    COUNTING, ZEROS, assert_refused, assert_says, block_generate, block_verify, simulate, stdout,
    succeeds,
};
use crate::common::describe;
use crate::common::games::shipped;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The text of a shipped definition.
fn shipped_text(name: &str) -> String {
    std::fs::read_to_string(shipped(name)).unwrap()
}

/// Asserts `tresor game check` refuses: exit 2 and one line on stderr
/// holding each of `words`.
fn assert_check_refused(files: &[&Path], extra: &[&str], words: &[&str]) {
    let mut args = vec!["game", "check"];
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.extend(files.iter().map(String::as_str));
    args.extend(extra);
    assert_refused(&args, words);
}

#[test]
fn game_check_prints_each_stake_s_payout_rate() {
    let island = shipped("ile-au-tresor.toml");
    let express = shipped("tresor-express.toml");
    let text = succeeds(&[
        "game",
        "check",
        island.to_str().unwrap(),
        express.to_str().unwrap(),
    ]);
    assert!(text.contains("OK: ile-au-tresor « L'Ile au Trésor » (Treasure Island), island scene, 450000 units per block"), "{text}");
    for stake in [50, 100, 200] {
        assert!(
            text.contains(&format!(
                "stake {stake} cents: 9 levels, 119604 winning units per block"
            )),
            "{text}"
        );
    }
    assert_eq!(text.matches("payout 70.00 %").count(), 3, "{text}");
    assert!(text.contains("OK: tresor-express « Trésor Express » (Treasure Express), scratch scene, 100000 units per block"), "{text}");
    assert_eq!(text.matches("payout 65.00 %").count(), 2, "{text}");
}

#[test]
fn game_check_refuses_a_malformed_definition_naming_its_line_and_rule() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let express = shipped_text("tresor-express.toml");

    let short = write(
        "short.toml",
        &express.replacen(
            "losing_units_per_block = 68_775",
            "losing_units_per_block = 68_774",
            1,
        ),
    );
    assert_check_refused(
        &[&short],
        &[],
        &[
            "short.toml: line 14: [levels-sum]",
            "add up to 99999, not the 100000",
        ],
    );

    let colour = write(
        "colour.toml",
        &express.replacen(
            "units_per_block = 100_000\n",
            "units_per_block = 100_000\ncolour = \"gold\"\n",
            1,
        ),
    );
    assert_check_refused(
        &[&colour],
        &[],
        &["colour.toml: line 6: [unknown-key]", "colour"],
    );

    let wheel = write(
        "wheel.toml",
        &express.replacen("kind = \"scratch\"", "kind = \"wheel\"", 1),
    );
    assert_check_refused(&[&wheel], &[], &["[unknown-scene-kind]", "\"wheel\""]);

    // The cap is the operator's: 65 % passes at 65, not at 64.99.
    let express_path = shipped("tresor-express.toml");
    succeeds(&[
        "game",
        "check",
        express_path.to_str().unwrap(),
        "--max-payout-percent",
        "65",
    ]);
    assert_check_refused(
        &[&express_path],
        &["--max-payout-percent", "64.99"],
        &[
            "line 12: [payout-cap]",
            "pays back 65.00 %",
            "cap of 64.99 %",
        ],
    );

    // Two files of one id.
    let copy = write("copy.toml", &express);
    assert_check_refused(
        &[&express_path, &copy],
        &[],
        &["copy.toml: line 1: [duplicate-id]", "\"tresor-express\""],
    );

    let missing = dir.path().join("missing.toml");
    assert_check_refused(&[&missing], &[], &["missing.toml: cannot read it"]);
}

#[test]
fn the_island_from_its_file_generates_and_verifies_exactly_as_the_built_in_island() {
    let island = shipped("ile-au-tresor.toml");
    let island = island.to_str().unwrap();
    for stake in ["50", "200"] {
        let built_in = block_generate(COUNTING, stake, &[]);
        let from_file = block_generate(COUNTING, stake, &["--game", island]);
        assert!(from_file.status.success(), "{}", describe(&from_file));
        assert_eq!(from_file.stdout, built_in.stdout);
    }
    // The pinned hash of docs/AUDIT.md, through the file.
    let output = block_generate(ZEROS, "50", &["--game", island]);
    assert_eq!(
        hex::encode(Sha256::digest(&output.stdout)),
        "67ed517a6d2a115769e0a88a6c4351f38ce273eda0c9de934e9325342f8c38aa"
    );
    let commitment = hex::encode(Sha256::digest([0u8; 32]));
    let verify = |extra: &[&str]| block_verify(ZEROS, &commitment, "100", extra);
    let (built_in, from_file) = (verify(&[]), verify(&["--game", island]));
    assert_exit(&built_in, 0);
    assert_eq!(stdout(&from_file), stdout(&built_in));
    assert_eq!(
        stdout(&built_in),
        format!(
            "OK: sha256(secret) equals the commitment {commitment}; the block's 450000 units hold \
             exactly the table (119604 winning units, 31500000 cents of prizes at 1,00 €), and \
             every unit's scene shows its level.\n"
        )
    );
}

#[test]
fn another_game_s_block_verifies_only_with_its_own_definition() {
    let express = shipped("tresor-express.toml");
    let express = express.to_str().unwrap();
    let text = shipped_text("tresor-express.toml");
    let mut hash = Sha256::new();
    hash.update(hex::decode(COUNTING).unwrap());
    hash.update(Sha256::digest(text.as_bytes()));
    let commitment = hex::encode(hash.finalize());
    let lines = succeeds(&[
        "block", "generate", "--secret", COUNTING, "--stake", "200", "--game", express,
    ]);
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 100_001);
    assert_eq!(lines[0], commitment);
    assert_eq!(lines[1..].iter().filter(|l| **l == "0").count(), 68_775);
    assert_eq!(lines[1..].iter().filter(|l| **l == "8").count(), 20_000);

    let verify = |file: &str| block_verify(COUNTING, &commitment, "200", &["--game", file]);
    let ok = verify(express);
    assert_exit(&ok, 0);
    assert!(
        stdout(&ok).starts_with(&format!(
            "OK: sha256(secret || sha256(definition)) equals the commitment {commitment}; the block's \
             100000 units hold exactly the table (31225 winning units, 13000000 cents of prizes at 2,00 €)"
        )),
        "{}",
        stdout(&ok)
    );
    // One byte more in the definition is another game: the commitment fails.
    let dir = tempfile::tempdir().unwrap();
    let edited = dir.path().join("edited.toml");
    std::fs::write(&edited, format!("{text}\n")).unwrap();
    let failed = verify(edited.to_str().unwrap());
    assert_exit(&failed, 1);
    assert!(stdout(&failed).starts_with("FAILED: sha256(secret || sha256(definition)) is "));
    // A stake the game does not sell is refused.
    let output = block_verify(COUNTING, &commitment, "50", &["--game", express]);
    assert_exit(&output, 2);
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("unknown stake 50 cents: the stakes are 100 and 200 cents")
    );
}

#[test]
fn scenario_prints_a_scratch_card_and_simulate_deals_whole_blocks_of_it() {
    let express = shipped("tresor-express.toml");
    let express = express.to_str().unwrap();
    let card = card_of(COUNTING, "100", "99999", express, (3, 3));
    let level = succeeds(&[
        "block", "generate", "--secret", COUNTING, "--stake", "100", "--game", express,
    ]);
    let level = level.lines().nth(1 + 99_999).unwrap().to_string();
    assert_eq!(card["outcome"]["level"].to_string(), level);
    assert_refused(
        &[
            "scenario", "--secret", COUNTING, "--stake", "100", "--index", "100000", "--game",
            express,
        ],
        &["units are numbered 0 to 99999"],
    );

    let text = simulate("100", "2", &["--game", express]);
    assert_says(
        &text,
        &[
            "game tresor-express (scratch scene)",
            "blocks holding exactly the table: 2 of 2",
            "does not evaluate to the unit's level: 0",
            "= 65.0000 % (the table's rate: 65.00 %)",
            "losing cards showing a pair",
            "chi-square",
        ],
    );
}

/// « Pièces d'or », the third game: this file and nothing else.
fn third_game() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/games/pieces-d-or.toml")
}

#[test]
fn a_third_game_that_is_only_a_file_is_checked_audited_and_simulated() {
    let file = third_game();
    let file = file.to_str().unwrap();
    let text = std::fs::read_to_string(file).unwrap();

    let report = succeeds(&["game", "check", file]);
    assert_says(
        &report,
        &[
            "OK: pieces-d-or « Pièces d'or » (Gold Coins), scratch scene, 50000 units per block",
            "stake 300 cents: 6 levels, 16661 winning units per block, 9550000 cents of prizes for 15000000 cents of sales: payout 63.67 %",
            "stake 1000 cents: 6 levels, 16661 winning units per block, 33500000 cents of prizes for 50000000 cents of sales: payout 67.00 %",
        ],
    );

    // Audited: its blocks are dealt from its table and committed with it.
    let mut hash = Sha256::new();
    hash.update([0u8; 32]);
    hash.update(Sha256::digest(text.as_bytes()));
    let commitment = hex::encode(hash.finalize());
    let levels = succeeds(&[
        "block", "generate", "--secret", ZEROS, "--stake", "1000", "--game", file,
    ]);
    assert_eq!(levels.lines().next(), Some(commitment.as_str()));
    assert_eq!(levels.lines().count(), 50_001);
    let verify = block_verify(ZEROS, &commitment, "1000", &["--game", file]);
    assert_exit(&verify, 0);
    assert!(stdout(&verify).contains("the block's 50000 units hold exactly the table (16661 winning units, 33500000 cents of prizes at 10,00 €)"));
    card_of(ZEROS, "300", "7", file, (4, 3));

    // Simulated: whole blocks hold the table and pay exactly its rate.
    let report = simulate("300", "2", &["--game", file]);
    assert_says(
        &report,
        &[
            "blocks holding exactly the table: 2 of 2",
            "does not evaluate to the unit's level: 0",
        ],
    );
    assert!(report.contains("19100000 cents of prizes for 30000000 cents of sales = 63.6667 % (the table's rate: 63.67 %)"), "{report}");
}

/// The card `tresor scenario` stages for the unit `index` of the block of
/// `secret` at `stake` of the scratch game `game`, which must be of `size`
/// (rows, columns), one cell each.
fn card_of(
    secret: &str,
    stake: &str,
    index: &str,
    game: &str,
    size: (u64, u64),
) -> serde_json::Value {
    let card = succeeds(&[
        "scenario", "--secret", secret, "--stake", stake, "--index", index, "--game", game,
    ]);
    let card: serde_json::Value = serde_json::from_str(&card).unwrap();
    assert_eq!(
        (card["rows"].as_u64(), card["columns"].as_u64()),
        (Some(size.0), Some(size.1))
    );
    let cells = card["cells"].as_array().unwrap().len() as u64;
    assert_eq!(cells, size.0 * size.1);
    card
}
