//! Architecture invariants that a test can hold (see ARCHITECTURE.md): the
//! modules of `src/` use each other in one direction only, with no circle;
//! so do the files of each folder; no file of `src/` is over 800 lines.

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

/// Every source file of `src/`, with its path relative to `src/`.
fn source_files() -> Vec<(std::path::PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut folders = vec![root.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().and_then(|e| e.to_str()) == Some("rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                let relative = path.strip_prefix(&root).expect("under src").to_path_buf();
                files.push((relative, text));
            }
        }
    }
    files.sort();
    files
}

/// The most lines a file of `src/` holds: past it, split it by concern.
const MAX_LINES: usize = 800;

#[test]
fn no_file_of_src_is_over_800_lines() {
    let long: Vec<String> = source_files()
        .into_iter()
        .filter(|(_, text)| text.lines().count() > MAX_LINES)
        .map(|(path, text)| format!("{} ({} lines)", path.display(), text.lines().count()))
        .collect();
    assert!(
        long.is_empty(),
        "files of src/ over {MAX_LINES} lines, to split by concern: {}",
        long.join(", ")
    );
}

/// The names a path names right after `prefix` in `code`: `a` in
/// `prefix a::b`, and `a`, `c` in `prefix {a::b, c}`.
fn names_after(code: &str, prefix: &str) -> Vec<String> {
    let ident = |text: &str| -> String {
        text.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        // Only a path that starts here (`super::x`, not `super::super::x`
        // seen from its second `super::`).
        if code[..at].ends_with("::")
            || code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The items of a group, at its top level.
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start && depth == 0 => {
                        names.push(ident(&group[i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(ident(rest));
        }
    }
    names.retain(|name| !name.is_empty());
    names
}

/// For each folder of `src/` below the top (`cli`, `http`, `writer`, …):
/// which of its files and subfolders use which others (by `super::x` or
/// `crate::folder::x`), in code rather than in comments. The folder's own
/// `mod.rs` (or `folder.rs`) declares them and is not one of them.
fn folder_graphs() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let files = source_files();
    let mut graphs: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    // The children of each folder.
    let mut children: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, _) in &files {
        let parts: Vec<String> = path
            .iter()
            .map(|p| p.to_str().expect("a UTF-8 path").to_owned())
            .collect();
        for depth in 1..parts.len() {
            let folder = parts[..depth].join("/");
            let child = parts[depth].trim_end_matches(".rs").to_owned();
            if child != "mod" {
                children.entry(folder).or_default().insert(child);
            }
        }
    }
    for (path, text) in &files {
        let parts: Vec<String> = path
            .iter()
            .map(|p| p.to_str().expect("a UTF-8 path").to_owned())
            .collect();
        // The file belongs to the child `parts[depth]` of each folder above it.
        for depth in 1..parts.len() {
            let folder = parts[..depth].join("/");
            let child = parts[depth].trim_end_matches(".rs").to_owned();
            if child == "mod" {
                continue;
            }
            let siblings = &children[&folder];
            // `super::` from this file up to `folder`: one per level below
            // it, less one for a `mod.rs`.
            let below =
                parts.len() - depth - usize::from(parts.last().is_some_and(|p| p == "mod.rs"));
            let supers = "super::".repeat(below);
            let crate_path = format!("crate::{}::", parts[..depth].join("::"));
            let uses = graphs
                .entry(folder.clone())
                .or_default()
                .entry(child.clone())
                .or_default();
            for line in text.lines() {
                let code = line.split("//").next().unwrap_or("");
                for name in names_after(code, &supers)
                    .into_iter()
                    .chain(names_after(code, &crate_path))
                {
                    if name != child && siblings.contains(&name) {
                        uses.insert(name);
                    }
                }
            }
        }
    }
    graphs
}

#[test]
fn the_files_of_each_folder_use_each_other_with_no_circle() {
    let graphs = folder_graphs();
    assert!(
        !graphs["cli"]["accounts"].is_empty() && !graphs["http"]["api"].is_empty(),
        "the graph sees `use super::x`: {:?}",
        graphs["cli"]
    );
    let mut circles = Vec::new();
    for (folder, graph) in &graphs {
        // Depth-first search for a back edge, reporting the circle found.
        fn visit<'g>(
            module: &'g str,
            graph: &'g BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<&'g str>,
            done: &mut BTreeSet<&'g str>,
            circles: &mut Vec<String>,
        ) {
            if done.contains(module) {
                return;
            }
            if let Some(start) = path.iter().position(|m| *m == module) {
                circles.push(format!("{} -> {module}", path[start..].join(" -> ")));
                return;
            }
            path.push(module);
            for next in graph.get(module).into_iter().flatten() {
                visit(next, graph, path, done, circles);
            }
            path.pop();
            done.insert(module);
        }
        let mut done = BTreeSet::new();
        let mut found = Vec::new();
        for module in graph.keys() {
            visit(module, graph, &mut Vec::new(), &mut done, &mut found);
        }
        circles.extend(found.into_iter().map(|c| format!("{folder}/: {c}")));
    }
    assert!(
        circles.is_empty(),
        "import circles between the files of a folder: {}",
        circles.join("; ")
    );
}
