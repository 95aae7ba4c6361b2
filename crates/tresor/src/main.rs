//! The `tresor` binary: the server and every operator command.

fn main() {
    println!("tresor");
}
