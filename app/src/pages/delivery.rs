//! The delivery pages: golden paths, release records and Tower's pull requests (`shared::delivery`,
//! `server/src/routes/delivery.rs`). Rarely a visit's first page, so each is a lazy route.

pub mod create;
pub mod pulls;
pub mod releases;
