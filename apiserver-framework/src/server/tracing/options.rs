//! The tracing flag, with upstream's name (`k8s.io/apiserver`'s `TracingOptions`).

use std::path::PathBuf;

use super::config::{TracingConfiguration, TracingError};

/// Flags of OpenTelemetry tracing.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct TracingOptions {
    /// File with apiserver tracing configuration.
    #[arg(long)]
    pub tracing_config_file: Option<PathBuf>,
}

impl TracingOptions {
    /// Whether tracing is asked for.
    pub fn enabled(&self) -> bool {
        self.tracing_config_file.is_some()
    }

    /// The configuration the flag names, read and validated; `None` without the flag.
    pub fn load(&self) -> Result<Option<TracingConfiguration>, TracingError> {
        self.tracing_config_file
            .as_deref()
            .map(TracingConfiguration::read)
            .transpose()
    }
}
