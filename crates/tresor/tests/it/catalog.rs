//! The catalogue (issue 36): game definition files checked by `tresor game
//! check`, each refusal one line naming the file, the line and the rule.

use crate::common::{describe, tresor};
use std::path::{Path, PathBuf};

/// A file of the repository's `games/` folder.
fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../games")
        .join(name)
}

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
    let output = tresor(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    for word in words {
        assert!(stderr.contains(word), "{stderr} does not say {word:?}");
    }
}

#[test]
fn game_check_prints_each_stake_s_payout_rate() {
    let island = shipped("ile-au-tresor.toml");
    let express = shipped("tresor-express.toml");
    let output = tresor(&[
        "game",
        "check",
        island.to_str().unwrap(),
        express.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let text = String::from_utf8_lossy(&output.stdout);
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
    let output = tresor(&[
        "game",
        "check",
        express_path.to_str().unwrap(),
        "--max-payout-percent",
        "65",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
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
