//! The metrics server binary: `metrics local` serves this machine's metrics to kubectl.

/// mimalloc rather than the system allocator, as wardle (see the book's "Performance" page).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match metrics::app().run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("metrics: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
