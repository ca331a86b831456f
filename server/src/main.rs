//! The `tower` binary: parse the command line, set up logging, run.

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

// mimalloc hands freed pages back to the system; glibc's malloc keeps them in per-thread arenas, so a
// long-running Tower's (and sandbox's) RSS crept up with every burst of short-lived JSON.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Tower, the developer portal of the platform.
#[derive(Debug, Parser)]
#[command(name = "tower", version)]
struct Cli {
    /// Log as JSON lines (for log collectors) instead of text.
    #[arg(long, env = "TOWER_LOG_JSON", global = true)]
    log_json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API and the SPA.
    Serve(server::serve::ServeArgs),
    /// Check a configuration file, or print its JSON Schema.
    #[command(subcommand)]
    Config(server::config::ConfigCommand),
    /// Run the offline sandbox platform on its own, or act on a running one.
    #[cfg(feature = "sandbox")]
    Sandbox(server::sandbox_cli::SandboxArgs),
    /// Not in this build (no `sandbox` feature): answers with a message saying so.
    #[cfg(not(feature = "sandbox"))]
    #[command(hide = true, disable_help_flag = true)]
    Sandbox {
        /// Whatever was asked of the sandbox.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_env("TOWER_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,tower_http=info,kube=warn"));
    if cli.log_json {
        tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).init();
    }
    // Before anything starts, so no SIGTERM or SIGINT meets the default action (which would leave children).
    let shutdown = server::shutdown::Shutdown::listen()?;
    match cli.command {
        Command::Serve(args) => server::serve::serve(args, shutdown).await,
        Command::Config(command) => {
            if !command.run() {
                std::process::exit(1);
            }
            Ok(())
        }
        #[cfg(feature = "sandbox")]
        Command::Sandbox(args) => server::sandbox_cli::run(args, shutdown).await,
        #[cfg(not(feature = "sandbox"))]
        Command::Sandbox { .. } => anyhow::bail!(server::serve::NO_SANDBOX),
    }
}
