//! wardle's server for the robustness harness: the same `main` as `examples/wardle`'s binary
//! (mimalloc, `wardle::app().run()`), built into this package so that its tests can start it as
//! a child process. The long mode runs `examples/wardle`'s own binary.

/// mimalloc, as wardle's binary allocates.
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
