//! Architecture invariants that a test can hold (see ARCHITECTURE.md): the
//! modules of `src/` use each other in one direction only, with no circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level module a source file belongs to (`service/plays.rs` →
/// `service`), or `None` for the crate root and the binary.
fn module_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_owned())
}

/// Which top-level modules each top-level module names (`crate::x`), in
/// code rather than in comments.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut folders = vec![root.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let Some(module) = module_of(path.strip_prefix(&root).expect("under src")) else {
                continue;
            };
            let text = std::fs::read_to_string(&path).expect("a source file");
            let uses = graph.entry(module.clone()).or_default();
            for line in text.lines() {
                let code = line.split("//").next().unwrap_or("");
                for (at, _) in code.match_indices("crate::") {
                    let rest = &code[at + "crate::".len()..];
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() && name != module {
                        uses.insert(name);
                    }
                }
            }
        }
    }
    graph
}

#[test]
fn the_modules_of_src_use_each_other_with_no_circle() {
    let graph = graph();
    assert!(graph.contains_key("service") && graph.contains_key("writer"));
    // Depth-first search for a back edge, reporting the circle found.
    fn visit<'g>(
        module: &'g str,
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'g str>,
        done: &mut BTreeSet<&'g str>,
    ) {
        if done.contains(module) {
            return;
        }
        if let Some(start) = path.iter().position(|m| *m == module) {
            panic!(
                "an import circle: {} -> {module}",
                path[start..].join(" -> ")
            );
        }
        path.push(module);
        for next in graph.get(module).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
        done.insert(module);
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        visit(module, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn the_batch_and_the_writer_sit_below_the_service_and_storage_below_them() {
    let graph = graph();
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
