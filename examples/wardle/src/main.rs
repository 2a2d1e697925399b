//! The wardle server binary: `wardle local` runs it for kubectl on this machine.

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
