//! Architecture invariants that a test can hold (see ARCHITECTURE.md), in
//! the crates' `src/` (`tresor`, `tresor-game` and `tresor-bench`): the
//! modules use each other in one direction only, with no circle, and so do
//! the files of each folder; no file of `src/` is over `SRC_LINE_CEILING`
//! lines. The reader (`architecture/reader.rs`) is itself tested on planted
//! code below.

mod reader;

use reader::{Graphs, circles, graphs, long_files, read_src};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The most lines a file of `src/` holds: past it, split it by concern.
const SRC_LINE_CEILING: usize = 600;

/// The most lines an integration test file holds.
const TEST_LINE_CEILING: usize = 800;

/// The `src/` folders of the workspace's crates, by crate.
fn crates() -> [(&'static str, PathBuf); 3] {
    let tresor = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        ("tresor", tresor.join("src")),
        ("tresor-game", tresor.join("../game/src")),
        ("tresor-bench", tresor.join("../bench/src")),
    ]
}

fn tresor_graphs() -> Graphs {
    graphs(&read_src(&crates()[0].1))
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut found = Vec::new();
    for (name, src) in crates() {
        let graphs = graphs(&read_src(&src));
        assert!(graphs.contains_key("crate"), "{name}'s modules are read");
        found.extend(circles(&graphs).into_iter().map(|c| format!("{name}: {c}")));
    }
    assert!(found.is_empty(), "import circles: {}", found.join("; "));
}

#[test]
fn the_reader_sees_grouped_imports_and_super_paths_in_the_real_code() {
    let tresor = tresor_graphs();
    let root = &tresor["crate"];
    assert!(root["service"].contains("store") && root["http"].contains("service"));
    assert!(
        !tresor["cli"]["accounts"].is_empty() && !tresor["http"]["api"].is_empty(),
        "the graph sees `use super::x`: {:?}",
        tresor["cli"]
    );
    let game = graphs(&read_src(&crates()[1].1));
    assert!(game["crate"]["definition"].contains("scenario"));
}

#[test]
fn the_batch_and_the_writer_sit_below_the_service_and_storage_below_them() {
    let graphs = tresor_graphs();
    let graph = &graphs["crate"];
    let uses = |module: &str, other: &str| graph.get(module).is_some_and(|u| u.contains(other));
    for lower in [
        "model", "clock", "error", "store", "trail", "protect", "batch", "writer",
    ] {
        assert!(!uses(lower, "service"), "{lower} must not use the service");
        assert!(!uses(lower, "http"), "{lower} must not use the HTTP edge");
        assert!(!uses(lower, "cli"), "{lower} must not use the command line");
    }
    for leaf in ["model", "clock"] {
        assert!(
            graph.get(leaf).is_none_or(BTreeSet::is_empty),
            "{leaf} uses nothing else of the crate: {:?}",
            graph.get(leaf)
        );
    }
}

#[test]
fn the_game_s_scene_kinds_never_name_the_definition() {
    let graphs = graphs(&read_src(&crates()[1].1));
    for kind in ["scenario", "scratch", "math", "block", "rng"] {
        assert!(
            !graphs["crate"][kind].contains("definition"),
            "{kind} names the definition: {:?}",
            graphs["crate"][kind]
        );
    }
}

#[test]
fn no_file_of_src_is_over_the_ceiling() {
    for (name, src) in crates() {
        let long = long_files(&read_src(&src), SRC_LINE_CEILING);
        assert!(
            long.is_empty(),
            "{name}: files of src/ over {SRC_LINE_CEILING} lines, to split by concern: {}",
            long.join(", ")
        );
    }
}

/// A test file reads as the behaviour it checks: a long one is several.
#[test]
fn test_files_are_at_most_the_ceiling() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let long = long_files(&read_src(&tests), TEST_LINE_CEILING);
    assert!(
        long.is_empty(),
        "test files over {TEST_LINE_CEILING} lines: {}",
        long.join(", ")
    );
}

/// Files planted in memory, as `read_src` gives them.
fn planted(files: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
    files
        .iter()
        .map(|(path, text)| (PathBuf::from(path), (*text).to_owned()))
        .collect()
}

#[test]
fn the_checker_fails_the_game_s_circle_as_it_was() {
    // Issue 43's circle: check.rs → scenario.rs → definition/mod.rs
    // (`SceneRules`, `ile_au_tresor`) → scratch.rs → scenario.rs (`Outcome`).
    let files = planted(&[
        ("lib.rs", "mod definition; mod scenario; mod scratch;"),
        (
            "definition/mod.rs",
            "mod check;\nuse crate::scenario::{IslandRules, Outcome};\nuse crate::scratch::Card;",
        ),
        (
            "definition/check.rs",
            "use crate::scenario::{Combination, Island};",
        ),
        (
            "scenario.rs",
            "fn rules() { match crate::definition::ile_au_tresor().scene() {\n\
             crate::definition::SceneRules::Island(r) => r, _ => todo!() } }",
        ),
        ("scratch.rs", "use crate::scenario::Outcome;"),
    ]);
    let found = circles(&graphs(&files));
    assert_eq!(found, ["crate: definition -> scenario -> definition"]);
}

#[test]
fn the_checker_fails_a_circle_closed_by_a_grouped_import() {
    let files = planted(&[
        ("lib.rs", "pub mod model; pub mod service; pub mod store;"),
        ("service/mod.rs", "use crate::store::Store;"),
        // Only the group's second item, nested, closes the circle.
        (
            "store/mod.rs",
            "use crate::{\n    model::Money,\n    service::{plays::{Play, Sale}, Service},\n};",
        ),
        ("model.rs", "pub struct Money;"),
    ]);
    let graphs = graphs(&files);
    assert_eq!(
        graphs["crate"]["store"],
        BTreeSet::from(["model".to_owned(), "service".to_owned()])
    );
    assert_eq!(circles(&graphs), ["crate: service -> store -> service"]);
}

#[test]
fn the_checker_fails_a_super_circle_and_one_through_a_re_export() {
    let direct = planted(&[
        ("lib.rs", "mod http;"),
        ("http/mod.rs", "mod api; mod error;"),
        ("http/api.rs", "use super::error::ApiError;"),
        ("http/error.rs", "fn f() -> super::api::Body { todo!() }"),
    ]);
    assert_eq!(circles(&graphs(&direct)), ["http: api -> error -> api"]);

    // `error` names `super::Body`, which the folder re-exports from `api`.
    let re_exported = planted(&[
        ("lib.rs", "mod http;"),
        (
            "http/mod.rs",
            "mod api; mod error;\npub use api::{Body as Body};",
        ),
        ("http/api.rs", "use super::error::ApiError;"),
        ("http/error.rs", "use super::Body;"),
    ]);
    assert_eq!(
        circles(&graphs(&re_exported)),
        ["http: api -> error -> api"]
    );
}

#[test]
fn the_checker_reads_no_path_in_comments_strings_or_unit_tests() {
    let files = planted(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "use crate::b::B;"),
        (
            "b.rs",
            "// crate::a::A\n/* crate::a::A /* nested */ crate::a::A */\n\
             const S: &str = \"crate::a::A\"; const R: &str = r#\"crate::a::\"A\"#;\n\
             const C: char = '{'; fn f<'a>(x: &'a str) {}\n\
             #[cfg(test)]\nmod tests { use crate::a::A; }\n\
             pub struct B;",
        ),
    ]);
    assert!(circles(&graphs(&files)).is_empty());
    // Where it is code, the same path closes the circle.
    let files = planted(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "use crate::b::B;"),
        (
            "b.rs",
            "const C: char = '}'; mod inner { use crate::a::A; }",
        ),
    ]);
    assert_eq!(circles(&graphs(&files)), ["crate: a -> b -> a"]);
}

#[test]
fn the_checker_fails_a_long_file() {
    let long = "// a line\n".repeat(SRC_LINE_CEILING + 1);
    let short = "// a line\n".repeat(SRC_LINE_CEILING);
    let files = planted(&[("long.rs", &long), ("short.rs", &short)]);
    assert_eq!(
        long_files(&files, SRC_LINE_CEILING),
        [format!("long.rs ({} lines)", SRC_LINE_CEILING + 1)]
    );
}
