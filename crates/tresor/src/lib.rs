//! Tresor: the game server, its storage, the web page and the operator's
//! commands, around the pure rules of `tresor_game`.

pub mod cli;
