//! `tresor` is what an operator installs and runs: the load generator is a
//! binary of its own (`tresor-bench`, crates/bench), not a command of it.

use crate::common::tresor;

#[test]
fn tresor_help_lists_no_bench() {
    let help = tresor(&["--help"]);
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    let commands: Vec<&str> = text
        .lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(
        commands.contains(&"serve") && commands.contains(&"audit"),
        "the commands are listed:\n{text}"
    );
    assert!(
        !commands.iter().any(|command| command.contains("bench")),
        "no bench among the commands {commands:?}"
    );
    let bench = tresor(&["bench"]);
    assert_eq!(bench.status.code(), Some(2), "no such command");
}
