//! {{project-name}}: a Kubernetes extension API server built with apiserver-framework.
//!
//! `cargo run -- local` serves it on https://127.0.0.1:8443 and writes
//! `./{{project-name}}.kubeconfig` for kubectl; `cargo run -- --help` lists the other commands.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match {{crate_name}}::app().run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{{project-name}}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
