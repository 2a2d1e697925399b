//! The wardle server binary: `wardle local` runs it for kubectl on this machine.

/// mimalloc rather than the system allocator: the server allocates many small, short-lived
/// buffers on every request from several threads (see the book's "Performance" page).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match wardle::app().run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wardle: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
