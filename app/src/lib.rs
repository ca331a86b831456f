//! Tower's browser app: a Leptos client-side-rendered SPA. It talks only to Tower's own API and event
//! stream, never to an upstream.

pub mod api;
pub mod app;
pub mod components;
pub mod live;
pub mod pages;

use wasm_bindgen::prelude::wasm_bindgen;

/// Mounts the app when the wasm module starts.
#[wasm_bindgen(start)]
pub fn start() {
    leptos::mount::mount_to_body(app::App);
}
