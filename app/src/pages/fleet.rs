//! The fleet's pages: what runs where, live (`shared::fleet`, `server/src/routes/fleet.rs`).

pub mod overview;
pub mod service;
