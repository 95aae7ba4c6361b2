//! How the architecture test reads a crate's `src/`: which module names
//! which, in code (not comments or strings), through `crate::`, `super::` and
//! `self::` paths, `use` groups nested to any depth (`use crate::{a::{b, c},
//! d}`) and the names a module's `use` and `pub use` make visible (a
//! `super::Name` that a parent re-exports from its child `x` names `x`).
//!
//! A module's `#[cfg(test)]` modules are left out: a unit test sits beside
//! the code it tests to reach its private parts and is built only for the
//! tests, so it is no part of the order the product's modules depend in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root: `["http", "api"]`; `[]` is the root.
pub type ModPath = Vec<String>;

/// For each folder (a module with children; `crate` for the root): which of
/// its children use which others.
pub type Graphs = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Every `.rs` file below `src`, with its path relative to `src`.
pub fn read_src(src: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut folders = vec![src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().and_then(|e| e.to_str()) == Some("rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                let relative = path.strip_prefix(src).expect("under src").to_path_buf();
                files.push((relative, text));
            }
        }
    }
    files.sort();
    files
}

/// The files over `ceiling` lines, each as `path (N lines)`.
pub fn long_files(files: &[(PathBuf, String)], ceiling: usize) -> Vec<String> {
    files
        .iter()
        .filter(|(_, text)| text.lines().count() > ceiling)
        .map(|(path, text)| format!("{} ({} lines)", path.display(), text.lines().count()))
        .collect()
}

/// The module a file holds: `a.rs` and `a/mod.rs` hold `a`; `lib.rs` the
/// root; `None` for a `main.rs` beside it, a binary crate of its own.
fn module_of(relative: &Path) -> Option<ModPath> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_str().expect("a UTF-8 path").to_owned())
        .collect();
    let last = parts.pop()?;
    match last.as_str() {
        "main.rs" if parts.is_empty() => None,
        "lib.rs" if parts.is_empty() => Some(parts),
        "mod.rs" => Some(parts),
        _ => {
            parts.push(last.trim_end_matches(".rs").to_owned());
            Some(parts)
        }
    }
}

/// A token of Rust code, comments, strings and lifetimes left out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
}

/// The length of the string or char literal starting at `at` (a `"`, `r"`,
/// `r#"`, `b"`, `br#"`, `'x'`, `b'x'`), `None` if none starts there.
fn literal_len(chars: &[char], at: usize) -> Option<usize> {
    let mut i = at;
    if chars[i] == 'b' {
        i += 1;
    }
    if chars.get(i) == Some(&'r') {
        let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
        if chars.get(i + 1 + hashes) != Some(&'"') {
            return None;
        }
        let body = i + 2 + hashes;
        let close: Vec<char> = std::iter::once('"')
            .chain(std::iter::repeat_n('#', hashes))
            .collect();
        let end = (body..=chars.len().saturating_sub(close.len()))
            .find(|&j| chars[j..j + close.len()] == close[..])?;
        return Some(end + close.len() - at);
    }
    match chars.get(i) {
        Some('"') => {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            Some(j + 1 - at)
        }
        // A char literal, not a lifetime: `'x'` or `'\n'`.
        Some('\'') if chars.get(i + 1) == Some(&'\\') => {
            let end = (i + 3..chars.len()).find(|&j| chars[j] == '\'')?;
            Some(end + 1 - at)
        }
        Some('\'') if chars.get(i + 2) == Some(&'\'') => Some(i + 3 - at),
        _ => None,
    }
}

/// The length of the comment starting at `at`, `None` if none does.
fn comment_len(chars: &[char], at: usize) -> Option<usize> {
    match (chars[at], chars.get(at + 1)) {
        ('/', Some('/')) => Some(
            chars[at..]
                .iter()
                .position(|&c| c == '\n')
                .unwrap_or(chars.len() - at),
        ),
        ('/', Some('*')) => {
            // Block comments nest.
            let (mut depth, mut j) = (0usize, at);
            while j < chars.len() {
                match (chars[j], chars.get(j + 1)) {
                    ('/', Some('*')) => (depth, j) = (depth + 1, j + 2),
                    ('*', Some('/')) => {
                        (depth, j) = (depth - 1, j + 2);
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => j += 1,
                }
            }
            Some(j - at)
        }
        _ => None,
    }
}

/// The tokens of `text`.
fn tokens(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let after_word = i > 0 && word(chars[i - 1]);
        if let Some(len) = comment_len(&chars, i) {
            i += len;
        } else if let Some(len) = (!after_word).then(|| literal_len(&chars, i)).flatten() {
            i += len;
        } else if c == '\'' {
            // A lifetime or a label: its name is no path.
            i += 1 + chars[i + 1..].iter().take_while(|&&c| word(c)).count();
        } else if word(c) {
            let len = chars[i..].iter().take_while(|&&c| word(c)).count();
            toks.push(Tok::Ident(chars[i..i + len].iter().collect()));
            i += len;
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            toks.push(Tok::Sep);
            i += 2;
        } else {
            if !c.is_whitespace() {
                toks.push(Tok::Punct(c));
            }
            i += 1;
        }
    }
    toks
}

/// One path a use tree or an expression names, as written: `crate::a::b`.
#[derive(Debug, Clone)]
struct Named {
    path: Vec<String>,
    /// The name it is known by in the module, for a `use`'s leaf.
    alias: Option<String>,
}

/// Reads the use tree at `toks[at..]` below `prefix`; returns where it ends.
fn use_tree(toks: &[Tok], mut at: usize, prefix: &[String], out: &mut Vec<Named>) -> usize {
    let mut path = prefix.to_vec();
    loop {
        match toks.get(at) {
            Some(Tok::Ident(name)) => {
                path.push(name.clone());
                at += 1;
                if toks.get(at) == Some(&Tok::Sep) {
                    at += 1;
                    continue;
                }
                let mut alias = Some(name.clone());
                if toks.get(at) == Some(&Tok::Ident("as".into())) {
                    if let Some(Tok::Ident(rename)) = toks.get(at + 1) {
                        alias = Some(rename.clone());
                    }
                    at += 2;
                }
                if name == "self" {
                    path.pop();
                    alias = alias.filter(|a| a != "self").or(path.last().cloned());
                }
                out.push(Named { path, alias });
                return at;
            }
            Some(Tok::Punct('{')) => {
                at += 1;
                while !matches!(toks.get(at), None | Some(Tok::Punct('}'))) {
                    at = use_tree(toks, at, &path, out);
                    if toks.get(at) == Some(&Tok::Punct(',')) {
                        at += 1;
                    }
                }
                return at + 1;
            }
            Some(Tok::Punct('*')) => {
                out.push(Named { path, alias: None });
                return at + 1;
            }
            _ => {
                if path.len() > prefix.len() {
                    out.push(Named { path, alias: None });
                }
                return at;
            }
        }
    }
}

/// Whether the item declared at `toks[at]` (a `mod`, after any `pub`) has a
/// `#[cfg(test)]` among the attributes right before it.
fn is_cfg_test(toks: &[Tok], mut at: usize) -> bool {
    let punct = |i: usize, c: char| toks.get(i) == Some(&Tok::Punct(c));
    // Step back over `pub` and `pub(crate)`.
    while at > 0 {
        match &toks[at - 1] {
            Tok::Ident(w) if w == "pub" || w == "crate" || w == "super" => at -= 1,
            Tok::Punct('(' | ')') => at -= 1,
            _ => break,
        }
    }
    while at >= 2 && punct(at - 1, ']') {
        let Some(open) = (0..at - 1).rev().find(|&i| punct(i, '[')) else {
            return false;
        };
        let inner: Vec<&Tok> = toks[open + 1..at - 1].iter().collect();
        let words = |i: usize, w: &str| inner.get(i) == Some(&&Tok::Ident(w.into()));
        if words(0, "cfg") && words(2, "test") && inner.len() == 4 {
            return true;
        }
        if open == 0 || !punct(open - 1, '#') {
            return false;
        }
        at = open - 1;
    }
    false
}

/// What one file declares and names.
#[derive(Debug, Default)]
struct FileUses {
    /// Modules declared in it (`mod x;` or `mod x { … }`), with whether each
    /// is a `#[cfg(test)]` one.
    modules: Vec<(ModPath, bool)>,
    /// (the module naming it, the path as written).
    named: Vec<(ModPath, Named)>,
    /// (the module a `use` is in, the name it gives, the path as written).
    aliases: Vec<(ModPath, String, Vec<String>)>,
}

/// Reads the modules declared and the paths named in the file of `module`.
fn read_file(module: &ModPath, text: &str) -> FileUses {
    let toks = tokens(text);
    let mut found = FileUses::default();
    // The inline modules open at this point: (name, the depth of their body,
    // whether they are tests).
    let mut inline: Vec<(String, usize, bool)> = Vec::new();
    let mut depth = 0;
    let mut at = 0;
    while at < toks.len() {
        let here: ModPath = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(name, _, _)| name.clone()))
            .collect();
        let in_test = inline.iter().any(|(_, _, test)| *test);
        let ident = |i: usize| match toks.get(i) {
            Some(Tok::Ident(w)) => Some(w.as_str()),
            _ => None,
        };
        match &toks[at] {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d, _)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            Tok::Ident(w) if w == "mod" => {
                if let Some(name) = ident(at + 1) {
                    let test = in_test || is_cfg_test(&toks, at);
                    let mut child = here.clone();
                    child.push(name.to_owned());
                    found.modules.push((child, test));
                    if toks.get(at + 2) == Some(&Tok::Punct('{')) {
                        depth += 1;
                        inline.push((name.to_owned(), depth, test));
                        at += 3;
                        continue;
                    }
                }
            }
            Tok::Ident(w) if w == "use" && !in_test => {
                let mut named = Vec::new();
                let start = at + 1 + usize::from(toks.get(at + 1) == Some(&Tok::Sep));
                at = use_tree(&toks, start, &[], &mut named);
                for n in named {
                    if let Some(alias) = &n.alias {
                        found
                            .aliases
                            .push((here.clone(), alias.clone(), n.path.clone()));
                    }
                    found.named.push((here.clone(), n));
                }
                continue;
            }
            Tok::Ident(w)
                if matches!(w.as_str(), "crate" | "super" | "self")
                    && toks.get(at + 1) == Some(&Tok::Sep)
                    && (at == 0 || toks[at - 1] != Tok::Sep)
                    && !in_test =>
            {
                let mut named = Vec::new();
                at = use_tree(&toks, at, &[], &mut named);
                let expression = named.into_iter().map(|mut n| {
                    n.alias = None;
                    (here.clone(), n)
                });
                found.named.extend(expression);
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    found
}

/// The crate's modules, their names, and what each (not a test) names.
struct Model {
    modules: BTreeSet<ModPath>,
    tests: BTreeSet<ModPath>,
    aliases: BTreeMap<ModPath, Vec<String>>,
    named: Vec<(ModPath, Named)>,
}

fn model(files: &[(PathBuf, String)]) -> Model {
    let mut m = Model {
        modules: BTreeSet::new(),
        tests: BTreeSet::new(),
        aliases: BTreeMap::new(),
        named: Vec::new(),
    };
    // A crate with no `lib.rs` is a binary whose root is its `main.rs`.
    let binary = !files.iter().any(|(path, _)| path == Path::new("lib.rs"));
    for (path, text) in files {
        let root = binary && path == Path::new("main.rs");
        let Some(module) = (if root {
            Some(Vec::new())
        } else {
            module_of(path)
        }) else {
            continue;
        };
        m.modules.insert(module.clone());
        let found = read_file(&module, text);
        for (declared, test) in found.modules {
            if test {
                m.tests.insert(declared.clone());
            }
            m.modules.insert(declared);
        }
        for (at, name, path) in found.aliases {
            let mut key = at;
            key.push(name);
            m.aliases.insert(key, path);
        }
        m.named.extend(found.named);
    }
    m
}

impl Model {
    fn is_test(&self, module: &[String]) -> bool {
        (0..=module.len()).any(|n| self.tests.contains(&module[..n]))
    }

    /// The absolute path of `path` as written in `from`; `None` for a path
    /// into another crate.
    fn absolute(&self, from: &[String], path: &[String]) -> Option<Vec<String>> {
        let mut base = from.to_vec();
        let mut rest = path;
        match rest.first().map(String::as_str) {
            Some("crate") => (base, rest) = (Vec::new(), &rest[1..]),
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                // A relative path names a child module or a name the module
                // imports; anything else is another crate.
                let mut child = base.clone();
                child.push(first.to_owned());
                if !self.modules.contains(&child) && !self.aliases.contains_key(&child) {
                    return None;
                }
            }
            None => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module an absolute path leads to, through the names `use` and
    /// `pub use` give: `http::Router`, re-exported from `http::api`, leads
    /// to `http::api`.
    fn target(&self, mut path: Vec<String>) -> ModPath {
        for _ in 0..16 {
            let known = (0..=path.len())
                .rev()
                .find(|&n| self.modules.contains(&path[..n]))
                .unwrap_or(0);
            let Some(aliased) = path
                .get(known)
                .and_then(|_| self.aliases.get(&path[..=known]))
            else {
                return path[..known].to_vec();
            };
            let Some(mut next) = self.absolute(&path[..known], aliased) else {
                return path[..known].to_vec();
            };
            next.extend(path[known + 1..].iter().cloned());
            if next == path {
                return path[..known].to_vec();
            }
            path = next;
        }
        path
    }
}

/// Which module uses which, as one graph per folder: a file of `http/` that
/// names `crate::store::x` is an edge `http → store` of the root's graph
/// (`crate`); `http/console.rs` naming `super::api::y`, an edge `console →
/// api` of `http`'s. A child naming its own folder's module file (`super::y`
/// for a `y` the folder defines itself) is no edge: that file is the
/// folder's face, which declares the children.
pub fn graphs(files: &[(PathBuf, String)]) -> Graphs {
    let model = model(files);
    let mut graphs = Graphs::new();
    for module in &model.modules {
        if module.is_empty() || model.is_test(module) {
            continue;
        }
        let (folder, child) = module.split_at(module.len() - 1);
        graphs
            .entry(folder_name(folder))
            .or_default()
            .entry(child[0].clone())
            .or_default();
    }
    for (from, named) in &model.named {
        if model.is_test(from) {
            continue;
        }
        let Some(absolute) = model.absolute(from, &named.path) else {
            continue;
        };
        let to = model.target(absolute);
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if from.len() > common && to.len() > common {
            graphs
                .entry(folder_name(&from[..common]))
                .or_default()
                .entry(from[common].clone())
                .or_default()
                .insert(to[common].clone());
        }
    }
    graphs
}

fn folder_name(folder: &[String]) -> String {
    if folder.is_empty() {
        "crate".to_owned()
    } else {
        folder.join("/")
    }
}

/// Every circle of every graph, each as `folder: a -> b -> a`.
pub fn circles(graphs: &Graphs) -> Vec<String> {
    // Depth-first search for back edges.
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
    let mut circles = Vec::new();
    for (folder, graph) in graphs {
        let mut done = BTreeSet::new();
        let mut found = Vec::new();
        for module in graph.keys() {
            visit(module, graph, &mut Vec::new(), &mut done, &mut found);
        }
        circles.extend(found.into_iter().map(|c| format!("{folder}: {c}")));
    }
    circles
}
