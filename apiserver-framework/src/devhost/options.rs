//! Flags of the development host (`<server> dev-host`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::aggregator::DEFAULT_REPLAY_BUDGET;
use crate::duration::GoDuration;
use crate::server::tracing::TracingOptions;

/// Options of the development host.
#[derive(Clone, Debug, clap::Args)]
pub struct DevHostOptions {
    /// The port the host serves HTTPS on (0 picks a free port).
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,
    /// The address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,
    /// The host's directory: certificates, tokens, rules and kubeconfigs (created on first
    /// start, reused afterwards).
    #[arg(long, default_value = "apiserver.local.config/dev-host")]
    pub dir: PathBuf,
    /// Where the extension server listens (`serve --secure-port`): the address the host's
    /// Service `<server>/api` resolves to.
    #[arg(long, default_value = "127.0.0.1:8444")]
    pub backend_address: SocketAddr,
    /// More addresses of the same Service, comma-separated: other replicas of the extension
    /// server. The aggregator spreads requests over every ready address and fails over.
    #[arg(long, value_delimiter = ',')]
    pub more_backend_addresses: Vec<SocketAddr>,
    /// How often the aggregator checks that each APIService's backend answers.
    #[arg(long, default_value = "5s")]
    pub availability_check_interval: GoDuration,
    /// The most bytes the aggregator keeps, over every request, of request bodies it may send
    /// to another replica when one fails before answering; a request whose body finds no room
    /// is proxied all the same, only not retried once its body was read.
    #[arg(long, default_value_t = DEFAULT_REPLAY_BUDGET)]
    pub aggregator_replay_budget_bytes: usize,
    /// OpenTelemetry tracing of the host's requests and its aggregator's proxy hops.
    #[command(flatten)]
    pub tracing: TracingOptions,
}

impl Default for DevHostOptions {
    fn default() -> Self {
        DevHostOptions {
            secure_port: 6443,
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            dir: PathBuf::from("apiserver.local.config/dev-host"),
            backend_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 8444)),
            more_backend_addresses: Vec::new(),
            availability_check_interval: GoDuration(Duration::from_secs(5)),
            aggregator_replay_budget_bytes: DEFAULT_REPLAY_BUDGET,
            tracing: TracingOptions::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        opts: DevHostOptions,
    }

    #[test]
    fn the_replay_budget_is_a_flag_with_the_aggregators_default() {
        let cli = Cli::try_parse_from(["dev-host"]).unwrap();
        assert_eq!(
            cli.opts.aggregator_replay_budget_bytes,
            DEFAULT_REPLAY_BUDGET
        );
        assert_eq!(
            DevHostOptions::default().aggregator_replay_budget_bytes,
            DEFAULT_REPLAY_BUDGET
        );
        let cli = Cli::try_parse_from(["dev-host", "--aggregator-replay-budget-bytes", "1048576"])
            .unwrap();
        assert_eq!(cli.opts.aggregator_replay_budget_bytes, 1 << 20);
        assert!(
            Cli::try_parse_from(["dev-host", "--aggregator-replay-budget-bytes", "-1"]).is_err()
        );
    }
}
