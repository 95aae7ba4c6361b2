//! Why a definition is refused: the rules of docs/GAMES.md, "Rules", and a
//! refusal naming the line of the file and the rule broken.

use std::fmt;

/// The rule a refused definition breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// Not TOML, or a value of the wrong type.
    Syntax,
    /// A key the grammar (or the scene kind) does not have.
    UnknownKey,
    /// A key the grammar requires is missing.
    MissingKey,
    /// A value out of its range or form.
    BadValue,
    /// A stake, level, symbol or game listed twice.
    DuplicateId,
    /// A scene kind the program does not know.
    UnknownSceneKind,
    /// A stake's levels and losing units do not fill a block exactly.
    LevelsSum,
    /// A stake pays back more than the operator's cap.
    PayoutCap,
    /// A prize reachable by no combination, or by more than one.
    OneCombination,
    /// A level whose scene cannot be staged, or does not show the level.
    Scene,
}

impl Rule {
    /// The rule's name, as docs/GAMES.md lists it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Syntax => "syntax",
            Rule::UnknownKey => "unknown-key",
            Rule::MissingKey => "missing-key",
            Rule::BadValue => "bad-value",
            Rule::DuplicateId => "duplicate-id",
            Rule::UnknownSceneKind => "unknown-scene-kind",
            Rule::LevelsSum => "levels-sum",
            Rule::PayoutCap => "payout-cap",
            Rule::OneCombination => "one-combination",
            Rule::Scene => "scene",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a definition is refused: where, which rule, and what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionError {
    /// The line of the file, from 1.
    pub line: usize,
    pub rule: Rule,
    pub message: String,
}

impl fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: [{}] {}", self.line, self.rule, self.message)
    }
}

impl std::error::Error for DefinitionError {}
