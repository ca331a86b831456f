//! Widgets more than one page uses.

pub mod delivery;
pub mod dependency_graph;
pub mod deployment_card;
pub mod focus;
pub mod log_console;
pub mod log_panel;
pub mod pipeline_graph;
pub mod platform;
pub mod status;
pub mod yaml_editor;
