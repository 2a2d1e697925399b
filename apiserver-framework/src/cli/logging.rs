//! Logging flags: klog's `-v`/`--v` verbosity and `--logging-format text|json`, and the
//! tracing subscriber they install.
//!
//! Verbosity maps to tracing levels: 0–2 `info`, 3–5 `debug` (request logs, as upstream's
//! `httplog` logs at `V(3)`), 6 and up `trace`. `RUST_LOG`, when set, decides instead, until
//! `PUT /debug/flags/v` sets a verbosity.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::server::debug_flags::set_verbosity_setter;
use crate::server::tracing::Tracing;

/// Crates logging connection-level detail, kept at `info` below verbosity 6.
const WIRE_CRATES: &[&str] = &[
    "h2",
    "hyper",
    "hyper_util",
    "rustls",
    "tokio_rustls",
    "reqwest",
    "tower",
    "kube_client",
    "redb",
];

/// The format of log lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LoggingFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Logging flags, accepted by every command.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct LoggingOptions {
    /// Log verbosity, 0–10 as klog's: 3 and up logs every request, 6 and up traces.
    #[arg(
        short = 'v',
        long = "v",
        global = true,
        default_value_t = 0,
        value_parser = clap::value_parser!(u8).range(0..=10)
    )]
    pub verbosity: u8,
    /// The format of log lines.
    #[arg(long, global = true, value_enum, default_value_t = LoggingFormat::Text)]
    pub logging_format: LoggingFormat,
}

impl LoggingOptions {
    /// The tracing level of the verbosity.
    pub fn level(&self) -> &'static str {
        match self.verbosity {
            0..=2 => "info",
            3..=5 => "debug",
            _ => "trace",
        }
    }

    /// The filter directives of the verbosity: its level, with the connection-level crates
    /// (HTTP/2, TLS, the HTTP client) kept at `info` below verbosity 6.
    pub fn directives(&self) -> String {
        let level = self.level();
        if self.verbosity >= 6 || level == "info" {
            return level.to_string();
        }
        let quiet = WIRE_CRATES.iter().map(|c| format!(",{c}=info"));
        std::iter::once(level.to_string()).chain(quiet).collect()
    }

    /// The filter: `RUST_LOG` when set, else the verbosity's directives.
    pub fn filter(&self) -> EnvFilter {
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(self.directives()))
    }

    /// Installs a subscriber logging as these options say, unless one is installed already;
    /// `PUT /debug/flags/v` then changes its verbosity (see `server::debug_flags`). With
    /// `tracing` (`--tracing-config-file`), its layer exports the framework's spans too. The log filter then applies to the log output
    /// alone, so that the verbosity does not decide which spans are exported.
    pub fn init_with(&self, tracing: Option<&Tracing>) {
        let Some(tracing) = tracing else {
            return self.init_logs_only();
        };
        let (filter, handle) = tracing_subscriber::reload::Layer::new(self.filter());
        let installed = match self.logging_format {
            LoggingFormat::Text => tracing_subscriber::registry()
                .with(tracing_subscriber::fmt::layer().with_filter(filter))
                .with(tracing.layer())
                .try_init(),
            LoggingFormat::Json => tracing_subscriber::registry()
                .with(tracing_subscriber::fmt::layer().json().with_filter(filter))
                .with(tracing.layer())
                .try_init(),
        };
        if installed.is_ok() {
            install_setter(handle);
        }
    }

    /// The subscriber without tracing: the log output alone, its filter global.
    fn init_logs_only(&self) {
        match self.logging_format {
            LoggingFormat::Text => {
                let builder = tracing_subscriber::fmt()
                    .with_env_filter(self.filter())
                    .with_filter_reloading();
                let handle = builder.reload_handle();
                if builder.try_init().is_ok() {
                    install_setter(handle);
                }
            }
            LoggingFormat::Json => {
                let builder = tracing_subscriber::fmt()
                    .json()
                    .with_env_filter(self.filter())
                    .with_filter_reloading();
                let handle = builder.reload_handle();
                if builder.try_init().is_ok() {
                    install_setter(handle);
                }
            }
        }
    }
}

/// Lets `PUT /debug/flags/v` replace the installed subscriber's filter through `handle`.
fn install_setter<S: 'static>(handle: tracing_subscriber::reload::Handle<EnvFilter, S>) {
    set_verbosity_setter(move |v| {
        let _ = handle.reload(verbosity_filter(v));
    });
}

/// The filter of klog verbosity `verbosity` (past 10, as 10).
fn verbosity_filter(verbosity: u32) -> EnvFilter {
    let options = LoggingOptions {
        verbosity: verbosity.min(10) as u8,
        ..LoggingOptions::default()
    };
    EnvFilter::new(options.directives())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        logging: LoggingOptions,
    }

    fn parse(args: &[&str]) -> Result<LoggingOptions, clap::Error> {
        Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).map(|c| c.logging)
    }

    #[test]
    fn verbosity_maps_to_levels() {
        assert_eq!(parse(&[]).unwrap().level(), "info");
        assert_eq!(parse(&["-v", "2"]).unwrap().level(), "info");
        assert_eq!(parse(&["--v=3"]).unwrap().level(), "debug");
        assert_eq!(parse(&["-v=6"]).unwrap().level(), "trace");
        assert!(parse(&["--v=11"]).is_err());
        assert_eq!(parse(&[]).unwrap().directives(), "info");
        let debug = parse(&["-v", "4"]).unwrap().directives();
        assert!(debug.starts_with("debug,h2=info,"), "{debug}");
        assert_eq!(parse(&["--v=7"]).unwrap().directives(), "trace");
    }

    #[test]
    fn formats_parse() {
        assert_eq!(parse(&[]).unwrap().logging_format, LoggingFormat::Text);
        assert_eq!(
            parse(&["--logging-format", "json"]).unwrap().logging_format,
            LoggingFormat::Json
        );
        assert!(parse(&["--logging-format", "yaml"]).is_err());
    }
}
