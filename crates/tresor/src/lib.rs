//! Tresor: the game server, its storage, the web page and the operator's
//! commands, around the pure rules of `tresor_game`.

pub mod account;
pub mod backup;
pub mod batch;
pub mod blocks;
pub mod cli;
pub mod clock;
pub mod error;
pub mod games;
pub mod http;
pub mod logcheck;
pub mod logkey;
pub mod mail;
pub mod metrics;
pub mod model;
pub mod open_files;
pub mod private;
pub mod protect;
pub mod report;
pub mod seal;
pub mod service;
pub mod staff;
pub mod store;
pub mod trail;
pub mod writer;
