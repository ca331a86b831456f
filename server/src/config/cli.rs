//! `tower config`: check a configuration file as `tower serve` would read it, or print its schema or
//! reference.

use std::path::PathBuf;

/// What `tower config` does.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ConfigCommand {
    /// Read FILE as `tower serve --config FILE` would (environment overrides included) and list every
    /// problem with its key; prints `FILE: ok` when Tower can use it.
    Check {
        /// The configuration file.
        file: PathBuf,
    },
    /// Print the JSON Schema of the configuration file (`deploy/tower.schema.json`).
    Schema {
        /// Print the reference rendered from it instead (`docs/configuration.md`).
        #[arg(long)]
        markdown: bool,
    },
}

impl ConfigCommand {
    /// Runs the command, printing its answer; returns whether it succeeded (a check that found problems
    /// did not, and has printed them to stderr).
    pub fn run(self) -> bool {
        match self {
            ConfigCommand::Check { file } => {
                match super::load(&file, |key| std::env::var(key).ok()) {
                    Ok(_) => {
                        println!("{}: ok", file.display());
                        true
                    }
                    Err(error) => {
                        eprintln!("{error}");
                        false
                    }
                }
            }
            ConfigCommand::Schema { markdown } => {
                if markdown {
                    println!("{}", super::reference::markdown());
                } else {
                    print!("{}", super::schema::json_schema_text());
                }
                true
            }
        }
    }
}
